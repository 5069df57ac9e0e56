-- name: findings
-- version: 1
-- description: What is unusual in a run, where, and the command that shows it: one row per finding (a stretch of
--   consecutive deduplicated steps that trip one rule is one row), ordered by run, severity (critical, warning,
--   info), step_from (NULLs last), kind. Kinds: slow_step, idle_engines, kv_cache_pressure, waiting_requests,
--   reward_drop, still_improving, grad_spike, entropy_collapse, staleness, timeouts, masked_trials, no_reward,
--   looping, damaged_input (rules: docs/findings.md, one file each: sql/queries/_finding_<kind>.sql.j2). A run
--   lacking a rule's inputs gives no row for it, the step rules read complete steps only (a run's last step
--   without timing/step is still being written). Shares are 0-1.
-- optional: true
-- param: slow_factor DOUBLE = 5, min 0: slow_step: a step's timing/step at least this many times the run's median
-- param: critical_factor DOUBLE = 20, min 0: slow_step is critical from this many times the median on
-- param: idle_share DOUBLE = 0.5, min 0: idle_engines: share (0-1) of a log's vLLM stat lines with no running request
-- param: kv_full_pct DOUBLE = 95, min 0: kv_cache_pressure: KV-cache usage, percent (0-100), that counts as full
-- param: kv_share DOUBLE = 0.1, min 0: kv_cache_pressure: share (0-1) of a log's stat lines at kv_full_pct or more
-- param: waiting_share DOUBLE = 0.25, min 0: waiting_requests: share (0-1) of a log's stat lines with requests waiting
-- param: span INTEGER = 5, min 1: reward_drop, still_improving: EMA span, in deduplicated steps
-- param: drop DOUBLE = 0.1, min 0: reward_drop: how far (absolute) the reward EMA falls below its running maximum
-- param: rising_steps INTEGER = 10, min 2: still_improving: the EMA rose over this many last steps
-- param: spike_factor DOUBLE = 10, min 0: grad_spike: policy/raw_grad_norm at least this many times its run median
-- param: entropy_floor DOUBLE = 0.25, min 0: entropy_collapse: entropy below this fraction of its early mean
-- param: entropy_first_steps INTEGER = 5, min 1: entropy_collapse: the early mean is over this many first steps
-- param: staleness_factor DOUBLE = 3, min 0: staleness: async/staleness_mean at least this many times its run median
-- param: discard_rate DOUBLE = 0.05, min 0: staleness: async/discard_rate (0-1) from which a step counts
-- param: timeout_share DOUBLE = 0.05, min 0: timeouts: share (0-1) of trials ending in AgentTimeoutError
-- param: masked_share DOUBLE = 0.05, min 0: masked_trials: share (0-1) of trials masked
-- param: no_reward_share DOUBLE = 0.01, min 0: no_reward: share (0-1) of trials with no exception and no reward
-- param: min_repeats INTEGER = 3, min 2: looping: how many times the same call must be made to count
-- param: looping_share DOUBLE = 0.1, min 0: looping: share (0-1) of the trials with a trajectory that loop
-- grain: run, kind, metric, log_file, step_from
-- column: run: the run: its folder's name
-- column: kind: what was found: one of the 14 kinds of docs/findings.md (slow_step, idle_engines, reward_drop,
--   looping, damaged_input, ...)
-- column: severity: critical, warning or info
-- column: log_file: the log (job) it happened in, where it belongs to one (every step of it from one log), else NULL
-- column: step_from: the first deduplicated step it covers, NULL where it has no steps
-- column: step_to: the last deduplicated step it covers (step_from for one step), NULL where it has no steps
-- column: metric: the column or figure it is about (timing/step, reward/avg_raw_reward, total_running_requests, ...)
-- column: value: the figure that tripped it, the worst of its steps (shares 0-1)
-- column: baseline: what value was compared with: the run's median, the running maximum, the threshold of a share
-- column: message: one sentence a person reads, with units
-- column: evidence: the command that shows it (rlsql query step_timing --run NAME), with -p where a parameter
--   matters
WITH
    step_rows AS (
        -- every deduplicated step: its position in the run (pos: neighbours are consecutive) and whether it is
        -- complete (it has timing/step, or a later step exists: the row of a step still being written has none)
        SELECT
            s.run,
            s.step,
            s.log_file,
            s.row_no,
            row_number() OVER (PARTITION BY s.run ORDER BY s.step) AS pos,
            t.value IS NOT NULL OR s.step < max(s.step) OVER (PARTITION BY s.run) AS complete
        FROM steps AS s
        LEFT JOIN metrics_long AS t ON t.run = s.run AND t.row_no = s.row_no AND t.metric = 'timing/step'
    ),
    step_values AS (
        SELECT s.run, s.pos, s.step, s.log_file, l.metric, l.value
        FROM step_rows AS s
        JOIN metrics_long AS l ON l.run = s.run AND l.row_no = s.row_no
        WHERE s.complete AND l.metric IN (
            'timing/step', 'policy/raw_grad_norm', 'policy/policy_entropy', 'async/staleness_mean', 'async/discard_rate'
        )
    ),
    medians AS (
        SELECT run, metric, median(value) AS median_value
        FROM step_values
        GROUP BY run, metric
    ),
    slow_steps AS (
        SELECT v.*, m.median_value AS baseline
        FROM step_values AS v
        JOIN medians AS m ON m.run = v.run AND m.metric = v.metric
        WHERE v.metric = 'timing/step' AND m.median_value > 0 AND v.value >= {{ param('slow_factor') }} * m.median_value
    ),
    grad_spikes AS (
        SELECT v.*, m.median_value AS baseline
        FROM step_values AS v
        JOIN medians AS m ON m.run = v.run AND m.metric = v.metric
        WHERE v.metric = 'policy/raw_grad_norm' AND m.median_value > 0
            AND v.value >= {{ param('spike_factor') }} * m.median_value
    ),
    entropy_lows AS (
        SELECT v.*, e.early_mean AS baseline
        FROM step_values AS v
        JOIN (
            SELECT run, avg(value) AS early_mean
            FROM (
                SELECT run, value, row_number() OVER (PARTITION BY run ORDER BY pos) AS nth
                FROM step_values
                WHERE metric = 'policy/policy_entropy'
            ) AS early
            WHERE nth <= {{ param('entropy_first_steps') }}
            GROUP BY run
        ) AS e ON e.run = v.run
        WHERE v.metric = 'policy/policy_entropy' AND v.value < {{ param('entropy_floor') }} * e.early_mean
    ),
    stale_steps AS (
        SELECT v.*, m.median_value AS baseline
        FROM step_values AS v
        JOIN medians AS m ON m.run = v.run AND m.metric = v.metric
        WHERE v.metric = 'async/staleness_mean' AND m.median_value > 0
            AND v.value >= {{ param('staleness_factor') }} * m.median_value
        UNION ALL
        SELECT v.*, CAST({{ param('discard_rate') }} AS DOUBLE) AS baseline
        FROM step_values AS v
        WHERE v.metric = 'async/discard_rate' AND v.value >= {{ param('discard_rate') }}
    ),
    ema_steps AS (
        SELECT e.run, s.pos, e.step, s.log_file, 'reward/avg_raw_reward' AS metric, e.ema
        FROM checkpoint_ema AS e
        JOIN step_rows AS s ON s.run = e.run AND s.step = e.step
        WHERE s.complete AND e.ema IS NOT NULL
    ),
    reward_drops AS (
        SELECT run, pos, step, log_file, metric, value, baseline
        FROM (
            SELECT
                run, pos, step, log_file, metric, ema AS value,
                max(ema) OVER (PARTITION BY run ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS baseline
            FROM ema_steps
        ) AS running
        WHERE baseline - value >= {{ param('drop') }}
    ),
    trial_counts AS (
        SELECT
            run,
            count(*) AS trials,
            count(*) FILTER (WHERE exception_type = 'AgentTimeoutError') AS timeouts,
            count(*) FILTER (WHERE effective_treatment = 'mask') AS masked,
            count(*) FILTER (WHERE exception_type = 'No exception' AND reward IS NULL) AS no_reward
        FROM trials
        GROUP BY run
    ),
    trajectory_files_read AS (
        -- one row per trajectory file: its problem (NULL: read) and its steps; the looping and damaged_input rules
        -- both read it, so a run's trajectories are parsed once for the two
        SELECT run, trial_name, source_file, max(problem) AS problem, count(step_index) AS steps
        FROM trajectory_steps_src
        GROUP BY run, trial_name, source_file
    ),
    found AS (
{%- for kind in ["slow_step", "idle_engines", "kv_cache_pressure", "waiting_requests", "reward_drop", "still_improving",
                 "grad_spike", "entropy_collapse", "staleness", "timeouts", "masked_trials", "no_reward", "looping",
                 "damaged_input"] %}
        {{ "UNION ALL" if not loop.first }}
        SELECT * FROM (
            {% include "queries/_finding_" ~ kind ~ ".sql.j2" %}
        ) AS {{ kind }}
{%- endfor %}
    )
SELECT run, kind, severity, log_file, step_from, step_to, metric, value, baseline, message, evidence
FROM found
ORDER BY
    run,
    CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
    step_from NULLS LAST,
    kind,
    metric,
    log_file NULLS LAST
