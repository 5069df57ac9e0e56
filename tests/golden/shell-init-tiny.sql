-- DuckDB init script written by rlsql <version> (DuckDB <version>): every rlsql view
-- and macro over the runs below, reading their files in place through absolute paths.
-- Use it with:  duckdb -init THIS_FILE   or   harlequin -i THIS_FILE
-- Runs:
--   tiny: <ROOT>/fixtures/runs/tiny
-- Query parameters are DuckDB variables. Set one before querying, for example:
--   SET VARIABLE span = 10
-- This script holds no semicolon except at the end of each statement (harlequin splits on them).
-- Parameters (name type = default): keys VARCHAR = NULL, min_repeats INTEGER = 3, save_every INTEGER = NULL, span INTEGER = 5
-- `SELECT * FROM duckdb_views() WHERE NOT internal` lists the views with their descriptions.

CREATE OR REPLACE VIEW "config_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS INTEGER) AS "ordinal", CAST(NULL AS VARCHAR) AS "key", CAST(NULL AS VARCHAR) AS "value", CAST(NULL AS VARCHAR) AS "value_json" WHERE false;

CREATE OR REPLACE VIEW "harbor_trials_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "source_file", CAST(NULL AS BIGINT) AS "row_no", CAST(NULL AS VARCHAR) AS "task_name", CAST(NULL AS VARCHAR) AS "trial_name", CAST(NULL AS DOUBLE) AS "n_episodes", CAST(NULL AS DOUBLE) AS "n_input_tokens", CAST(NULL AS DOUBLE) AS "n_output_tokens", CAST(NULL AS VARCHAR) AS "exception_type", CAST(NULL AS DOUBLE) AS "reward", CAST(NULL AS DOUBLE) AS "agent_duration_sec", CAST(NULL AS DOUBLE) AS "trial_duration", CAST(NULL AS DOUBLE) AS "environment_setup_duration", CAST(NULL AS DOUBLE) AS "agent_setup_duration", CAST(NULL AS DOUBLE) AS "agent_execution_duration", CAST(NULL AS DOUBLE) AS "verifier_duration", CAST(NULL AS VARCHAR) AS "exception_message", CAST(NULL AS VARCHAR) AS "started_at", CAST(NULL AS VARCHAR) AS "finished_at", CAST(NULL AS VARCHAR) AS "problem", CAST(NULL AS VARCHAR) AS "bad_values", CAST(NULL AS VARCHAR) AS "nonfinite" WHERE false;

CREATE OR REPLACE VIEW "metrics_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "source_file", CAST(NULL AS BIGINT) AS "row_no", CAST(NULL AS VARCHAR) AS "log_file", CAST(NULL AS BIGINT) AS "trainer/global_step", CAST(NULL AS BIGINT) AS "global_step", CAST(NULL AS DOUBLE) AS "reward/avg_raw_reward", CAST(NULL AS DOUBLE) AS "timing/step", CAST(NULL AS DOUBLE) AS "async/staleness_mean", CAST(NULL AS DOUBLE) AS "async/staleness_max", CAST(NULL AS DOUBLE) AS "async/discard_rate", CAST(NULL AS BIGINT) AS "async/discarded_count", CAST(NULL AS DOUBLE) AS "reward/avg_pass_at_4", CAST(NULL AS DOUBLE) AS "timing/wait_for_generation_buffer", CAST(NULL AS DOUBLE) AS "timing/policy_train", CAST(NULL AS DOUBLE) AS "timing/run_training", CAST(NULL AS DOUBLE) AS "timing/sync_weights", CAST(NULL AS DOUBLE) AS "timing/save_checkpoints", CAST(NULL AS DOUBLE) AS "timing/mystery_span" WHERE false;

CREATE OR REPLACE VIEW "run_files" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "artifact", CAST(NULL AS VARCHAR) AS "path", CAST(NULL AS VARCHAR) AS "prefix" WHERE false;

CREATE OR REPLACE VIEW "runs" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "run_path", CAST(NULL AS DATE) AS "vllm_base_date" WHERE false;

CREATE OR REPLACE VIEW "tool_calls_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "trial_name", CAST(NULL AS INTEGER) AS "segment", CAST(NULL AS BIGINT) AS "step_index", CAST(NULL AS BIGINT) AS "step_id", CAST(NULL AS BIGINT) AS "turn", CAST(NULL AS BIGINT) AS "call_index", CAST(NULL AS VARCHAR) AS "tool_call_id", CAST(NULL AS VARCHAR) AS "function_name", CAST(NULL AS VARCHAR) AS "arguments", CAST(NULL AS BIGINT) AS "observation_chars", CAST(NULL AS BOOLEAN) AS "copied" WHERE false;

CREATE OR REPLACE VIEW "trajectory_steps_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "trial_name", CAST(NULL AS INTEGER) AS "segment", CAST(NULL AS VARCHAR) AS "source_file", CAST(NULL AS VARCHAR) AS "problem", CAST(NULL AS BIGINT) AS "step_index", CAST(NULL AS BIGINT) AS "step_id", CAST(NULL AS BIGINT) AS "turn", CAST(NULL AS VARCHAR) AS "source", CAST(NULL AS VARCHAR) AS "timestamp", CAST(NULL AS TIMESTAMP) AS "ts", CAST(NULL AS VARCHAR) AS "model_name", CAST(NULL AS BIGINT) AS "message_chars", CAST(NULL AS BIGINT) AS "reasoning_chars", CAST(NULL AS BIGINT) AS "tool_calls", CAST(NULL AS BIGINT) AS "prompt_tokens", CAST(NULL AS BIGINT) AS "completion_tokens", CAST(NULL AS BIGINT) AS "cached_tokens", CAST(NULL AS DOUBLE) AS "cost_usd", CAST(NULL AS BOOLEAN) AS "copied" WHERE false;

CREATE OR REPLACE VIEW "trajectory_texts_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "trial_name", CAST(NULL AS INTEGER) AS "segment", CAST(NULL AS VARCHAR) AS "source_file", CAST(NULL AS VARCHAR) AS "problem", CAST(NULL AS BIGINT) AS "step_index", CAST(NULL AS BIGINT) AS "step_id", CAST(NULL AS VARCHAR) AS "source", CAST(NULL AS VARCHAR) AS "timestamp", CAST(NULL AS VARCHAR) AS "message", CAST(NULL AS VARCHAR) AS "reasoning", CAST(NULL AS VARCHAR) AS "calls", CAST(NULL AS VARCHAR) AS "observations" WHERE false;

CREATE OR REPLACE VIEW "trials_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "source_file", CAST(NULL AS BIGINT) AS "row_no", CAST(NULL AS VARCHAR) AS "task_name", CAST(NULL AS VARCHAR) AS "trial_name", CAST(NULL AS BIGINT) AS "n_episodes", CAST(NULL AS BIGINT) AS "n_input_tokens", CAST(NULL AS BIGINT) AS "n_output_tokens", CAST(NULL AS VARCHAR) AS "exception_type", CAST(NULL AS DOUBLE) AS "reward", CAST(NULL AS DOUBLE) AS "agent_duration_sec", CAST(NULL AS DOUBLE) AS "trial_duration", CAST(NULL AS DOUBLE) AS "environment_setup_duration", CAST(NULL AS DOUBLE) AS "agent_setup_duration", CAST(NULL AS DOUBLE) AS "agent_execution_duration", CAST(NULL AS DOUBLE) AS "verifier_duration" WHERE false;

CREATE OR REPLACE VIEW "vllm_src" AS SELECT CAST(NULL AS VARCHAR) AS "run", CAST(NULL AS VARCHAR) AS "source_file", CAST(NULL AS BIGINT) AS "row_no", CAST(NULL AS VARCHAR) AS "log_file", CAST(NULL AS VARCHAR) AS "datetime_str", CAST(NULL AS BIGINT) AS "n_engines_reporting", CAST(NULL AS BIGINT) AS "unique_ips", CAST(NULL AS DOUBLE) AS "total_prompt_throughput_tokens_per_sec", CAST(NULL AS DOUBLE) AS "total_generation_throughput_tokens_per_sec", CAST(NULL AS BIGINT) AS "total_running_requests", CAST(NULL AS BIGINT) AS "total_waiting_requests", CAST(NULL AS DOUBLE) AS "avg_prompt_throughput_per_engine", CAST(NULL AS DOUBLE) AS "avg_generation_throughput_per_engine", CAST(NULL AS DOUBLE) AS "avg_running_requests_per_engine", CAST(NULL AS DOUBLE) AS "avg_waiting_requests_per_engine", CAST(NULL AS DOUBLE) AS "avg_gpu_kv_cache_usage_pct", CAST(NULL AS DOUBLE) AS "avg_prefix_cache_hit_rate_pct", CAST(NULL AS BIGINT) AS "min_running_requests", CAST(NULL AS BIGINT) AS "max_running_requests", CAST(NULL AS DOUBLE) AS "min_generation_throughput", CAST(NULL AS DOUBLE) AS "max_generation_throughput" WHERE false;

CREATE OR REPLACE MACRO ema_last(vals, span) AS
    CASE WHEN len(vals) > 0 THEN
        list_reduce(vals, lambda acc, x: (2.0 / (span + 1)) * x + (1 - 2.0 / (span + 1)) * acc)
    END;

COMMENT ON MACRO "ema_last" IS 'ema_last(values, span): the exponential moving average after the last of an ordered list of values, alpha = 2/(span+1), seeded with the first value (EMA_1 = v_1, EMA_n = alpha*v_n + (1-alpha)*EMA_(n-1)). NULL for an empty list.';

CREATE OR REPLACE MACRO ema(tbl, span := 5) AS TABLE
    SELECT
        series,
        x,
        value,
        CASE WHEN value IS NOT NULL THEN
            ema_last(
                list(value ORDER BY x) FILTER (WHERE value IS NOT NULL) OVER (
                    PARTITION BY series ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
                ),
                span
            )
        END AS ema
    FROM query_table(tbl)
    ORDER BY series, x;

COMMENT ON MACRO TABLE "ema" IS 'Table macro ema(table_name, span := 5): over any table or view with columns (series, x, value), returns series, x, value and ema, the EMA of value along x within each series (alpha = 2/(span+1), seeded with the first value, NULL values are skipped and get a NULL ema). Example: SELECT * FROM ema(''my_points'', span := 10).';

CREATE OR REPLACE MACRO rolling_mean(tbl, span := 5) AS TABLE
    SELECT
        series,
        x,
        value,
        avg(value) OVER (PARTITION BY series ORDER BY x ROWS BETWEEN span - 1 PRECEDING AND CURRENT ROW)
            AS rolling_mean
    FROM query_table(tbl)
    ORDER BY series, x;

COMMENT ON MACRO TABLE "rolling_mean" IS 'Table macro rolling_mean(table_name, span := 5): over any table or view with columns (series, x, value), returns series, x, value and rolling_mean, the mean of the non-NULL values among the last `span` rows of the series ordered by x (fewer at the start).';

CREATE OR REPLACE MACRO route_exception(exception_type, routing) AS
    CASE
        WHEN exception_type = 'No exception' THEN 'none'
        WHEN list_contains(routing.passthrough_exceptions, exception_type) THEN 'passthrough'
        WHEN list_contains(routing.mask_exceptions, exception_type) THEN 'mask'
        WHEN list_contains(routing.zero_exceptions, exception_type) THEN 'zero'
        ELSE routing.default_error_treatment
    END;

COMMENT ON MACRO "route_exception" IS 'route_exception(exception_type, routing): the treatment the trainer gives a trial that ended with `exception_type` (`No exception`: none), where `routing` is the run''s exception_routing row. Exact names, checked in the trainer''s order passthrough, mask, zero, then the default.';

CREATE OR REPLACE VIEW "config" AS
SELECT run, ordinal, key, value, value_json
FROM config_src;

COMMENT ON VIEW "config" IS 'Each run''s rl_config.yaml flattened: run, ordinal (document order), key (dotted path such as trainer.hf_save_interval), value (text), value_json (lists stay whole, as JSON).';

CREATE OR REPLACE VIEW "checkpoint_settings" AS
WITH configured AS (
    -- a whole number only: TRY_CAST alone would round 2.5 to 3 (rlsql/config.py warns about the rest)
    SELECT run, arg_min(
        CASE WHEN TRY_CAST(value AS DOUBLE) = TRY_CAST(value AS INTEGER) THEN TRY_CAST(value AS INTEGER) END,
        ordinal) AS hf_save_interval
    FROM config
    WHERE key = 'trainer.hf_save_interval'
    GROUP BY run
)
SELECT
    f.run,
    coalesce(
        CAST(coalesce(getvariable('save_every'), CAST(NULL AS INTEGER)) AS INTEGER),
        CASE WHEN c.hf_save_interval >= 1 THEN c.hf_save_interval END,
        20
    ) AS save_every
FROM run_files AS f
LEFT JOIN configured AS c ON c.run = f.run
WHERE f.artifact = 'metrics';

COMMENT ON VIEW "checkpoint_settings" IS 'The checkpoint interval per run with trainer metrics: save_every = the save_every parameter, else the config''s trainer.hf_save_interval, else 20 (the parser''s default).';

CREATE OR REPLACE VIEW "metric_rows" AS
SELECT
    run,
    log_file,
    CAST(coalesce("trainer/global_step", global_step) AS BIGINT) AS step,
    row_no,
    source_file,
    -- the counts every metrics source declares are whole numbers: BIGINT (pandas writes `12.0` for a column
    -- with a gap), the run's other metric columns keep the source's DOUBLE
    * EXCLUDE (run, log_file, row_no, source_file) REPLACE (
        CAST("trainer/global_step" AS BIGINT) AS "trainer/global_step",
        CAST(global_step AS BIGINT) AS global_step,
        CAST("async/discarded_count" AS BIGINT) AS "async/discarded_count"
    )
FROM metrics_src;

COMMENT ON VIEW "metric_rows" IS 'Every trainer metric row of every run, as logged (a re-run step appears once per log): run, log_file, step (trainer/global_step, else global_step), row_no (CSV order), source_file, then every metric column.';

CREATE OR REPLACE VIEW "metrics_long" AS
UNPIVOT (
    SELECT run, log_file, step, row_no, * EXCLUDE (run, log_file, step, row_no, source_file, global_step)
    FROM metric_rows
)
ON COLUMNS(* EXCLUDE (run, log_file, step, row_no))
INTO NAME metric VALUE value;

COMMENT ON VIEW "metrics_long" IS 'Every recorded numeric metric value in long form: run, log_file, step, row_no, metric (the column name, e.g. reward/avg_raw_reward), value. Empty cells have no row.';

CREATE OR REPLACE VIEW "steps" AS
SELECT *
FROM metric_rows
WHERE step IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY run, step ORDER BY row_no) = 1;

COMMENT ON VIEW "steps" IS 'One metric row per (run, step): the first-seen row in CSV order, the one the checkpoint selector uses when a resumed job re-ran a step.';

CREATE OR REPLACE VIEW "reward_curve" AS
WITH
    pass_columns AS (
        SELECT run, metric, CAST(regexp_extract(metric, '^reward/avg_pass_at_([0-9]+)$', 1) AS INTEGER) AS k
        FROM metrics_long
        WHERE regexp_full_match(metric, 'reward/avg_pass_at_[0-9]+')
        GROUP BY run, metric
        -- a run logs one pass@k (k = n_samples_per_prompt), should it log several, take the lowest k
        QUALIFY row_number() OVER (PARTITION BY run ORDER BY k) = 1
    ),
    points AS (
        SELECT s.run, s.step, s.log_file, s."reward/avg_raw_reward" AS reward, l.value AS pass_at_k, p.k
        FROM steps AS s
        LEFT JOIN pass_columns AS p ON p.run = s.run
        LEFT JOIN metrics_long AS l ON l.run = s.run AND l.row_no = s.row_no AND l.metric = p.metric
    )
SELECT
    run,
    step,
    log_file,
    reward,
    pass_at_k,
    k,
    CASE WHEN reward IS NOT NULL THEN
        ema_last(
            list(reward ORDER BY step) FILTER (WHERE reward IS NOT NULL) OVER (
                PARTITION BY run ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
            ),
            CAST(coalesce(getvariable('span'), 5) AS INTEGER)
        )
    END AS ema,
    avg(reward) OVER (
        PARTITION BY run ORDER BY step ROWS BETWEEN CAST(coalesce(getvariable('span'), 5) AS INTEGER) - 1 PRECEDING AND CURRENT ROW
    ) AS rolling_mean
FROM points
ORDER BY run, step;

COMMENT ON VIEW "reward_curve" IS 'Reward per deduplicated step (first-seen row): reward/avg_raw_reward, the run''s pass@k and its k, the EMA (alpha = 2/(span+1), seeded with the first reward) and the rolling mean of the last `span` steps.';

CREATE OR REPLACE VIEW "checkpoint_ema" AS
WITH
    marked AS (
        SELECT c.run, c.step, c.reward, c.ema, c.rolling_mean, s.save_every
        FROM reward_curve AS c
        JOIN checkpoint_settings AS s ON s.run = c.run
    ),
    eligibility AS (
        SELECT *, coalesce(ema IS NOT NULL AND step % save_every = 0 AND step >= 2 * save_every, false) AS eligible
        FROM marked
    )
SELECT
    run,
    step,
    reward,
    ema,
    rolling_mean,
    save_every,
    eligible,
    eligible AND row_number() OVER (PARTITION BY run, eligible ORDER BY ema DESC, step) = 1 AS is_best
FROM eligibility
ORDER BY run, step;

COMMENT ON VIEW "checkpoint_ema" IS 'The EMA table behind best_checkpoint: one row per run and deduplicated step with reward, ema and rolling_mean (from reward_curve), the run''s save_every (from checkpoint_settings), eligible (the step has an EMA, is a multiple of save_every and at least 2*save_every) and is_best (the eligible step with the highest EMA, ties to the earliest).';

CREATE OR REPLACE VIEW "config_diff" AS
WITH
    config_runs AS (
        SELECT DISTINCT run FROM run_files WHERE artifact = 'config'
    ),
    keys AS (
        SELECT DISTINCT key FROM config
    ),
    grid AS (
        SELECT
            r.run,
            k.key,
            CASE WHEN c.key IS NOT NULL THEN coalesce(c.value, 'null') END AS value,
            c.value_json
        FROM config_runs AS r
        CROSS JOIN keys AS k
        LEFT JOIN config AS c ON c.run = r.run AND c.key = k.key
    ),
    differing AS (
        SELECT key
        FROM grid
        GROUP BY key
        HAVING count(DISTINCT coalesce(value_json, '<absent>')) > 1
    )
SELECT g.run, g.key, g.value
FROM grid AS g
JOIN differing AS d ON d.key = g.key
ORDER BY g.key, g.run;

COMMENT ON VIEW "config_diff" IS 'The rl_config.yaml keys whose value differs between the runs that have a config (a key one run lacks differs too): run, key (dotted path), value (text, `null` for a YAML null, NULL where the run lacks the key). Ordered by key, then run. Empty for fewer than two runs with a config.';

CREATE OR REPLACE VIEW "exception_routing" AS
WITH
    leaves AS (
        SELECT run, ordinal, regexp_extract(key, '[^.]+$') AS leaf, value, value_json
        FROM config
        WHERE value_json IS NOT NULL AND value_json <> 'null'
    ),
    picked AS (
        SELECT
            run,
            arg_min(value_json, ordinal) FILTER (WHERE leaf = 'passthrough_exceptions') AS passthrough_json,
            arg_min(value_json, ordinal) FILTER (WHERE leaf = 'mask_exceptions') AS mask_json,
            arg_min(value_json, ordinal) FILTER (WHERE leaf = 'zero_exceptions') AS zero_json,
            arg_min(value, ordinal) FILTER (WHERE leaf = 'default_error_treatment') AS default_text
        FROM leaves
        GROUP BY run
    )
SELECT
    r.run,
    coalesce(CASE WHEN json_type(p.passthrough_json) = 'ARRAY' THEN CAST(json(p.passthrough_json) AS VARCHAR[]) END, CAST([] AS VARCHAR[])) AS passthrough_exceptions,
    coalesce(
        CASE WHEN json_type(p.mask_json) = 'ARRAY' THEN CAST(json(p.mask_json) AS VARCHAR[]) END,
        ['DaytonaError', 'EnvironmentStartTimeoutError', 'NetworkError', 'ConnectionError',
         'RewardFileNotFoundError', 'RewardFileEmptyError']
    ) AS mask_exceptions,
    coalesce(CASE WHEN json_type(p.zero_json) = 'ARRAY' THEN CAST(json(p.zero_json) AS VARCHAR[]) END, ['AgentTimeoutError', 'ContextLengthExceededError']) AS zero_exceptions,
    CASE WHEN lower(p.default_text) IN ('zero', 'mask', 'passthrough') THEN lower(p.default_text) ELSE 'zero' END
        AS default_error_treatment,
    p.run IS NOT NULL AS from_config
FROM runs AS r
LEFT JOIN picked AS p ON p.run = r.run;

COMMENT ON VIEW "exception_routing" IS 'How each run''s trainer routes a failed trial by its exact exception name: passthrough, mask and zero lists and the default treatment, from rl_config.yaml wherever the keys sit (first match in document order), each absent key taking the trainer''s default.';

CREATE OR REPLACE VIEW "log_summary" AS
WITH
    pass_columns AS (
        -- as reward_curve: the run's pass@k column (the lowest k should it log several)
        SELECT run, metric, CAST(regexp_extract(metric, '^reward/avg_pass_at_([0-9]+)$', 1) AS INTEGER) AS k
        FROM metrics_long
        WHERE regexp_full_match(metric, 'reward/avg_pass_at_[0-9]+')
        GROUP BY run, metric
        QUALIFY row_number() OVER (PARTITION BY run ORDER BY k) = 1
    ),
    picked AS (
        SELECT
            l.run,
            l.log_file,
            avg(l.value) FILTER (WHERE l.metric = p.metric) AS mean_pass_at_k,
            avg(l.value) FILTER (WHERE l.metric = 'timing/wait_for_generation_buffer') AS mean_generation_wait_s,
            avg(l.value) FILTER (WHERE l.metric = 'generate/avg_num_tokens') AS mean_tokens,
            avg(l.value) FILTER (WHERE l.metric = 'async/staleness_mean') AS mean_staleness
        FROM metrics_long AS l
        LEFT JOIN pass_columns AS p ON p.run = l.run
        WHERE l.metric IN ('timing/wait_for_generation_buffer', 'generate/avg_num_tokens', 'async/staleness_mean')
            OR l.metric = p.metric
        GROUP BY l.run, l.log_file
    ),
    per_log AS (
        SELECT
            run,
            log_file,
            count(*) AS rows,
            min(step) AS first_step,
            max(step) AS last_step,
            avg("reward/avg_raw_reward") AS mean_reward,
            avg("timing/step") AS mean_step_s
        FROM metric_rows
        GROUP BY run, log_file
    )
SELECT
    g.run,
    g.log_file,
    g.rows,
    g.first_step,
    g.last_step,
    g.mean_reward,
    x.mean_pass_at_k,
    p.k,
    g.mean_step_s,
    x.mean_generation_wait_s,
    x.mean_tokens,
    x.mean_staleness
FROM per_log AS g
LEFT JOIN picked AS x ON x.run = g.run AND x.log_file IS NOT DISTINCT FROM g.log_file
LEFT JOIN pass_columns AS p ON p.run = g.run
ORDER BY g.run, g.log_file;

COMMENT ON VIEW "log_summary" IS 'The cross-log comparison: one row per run and log_file with the log''s metric rows, first and last step, and the means over its rows of reward/avg_raw_reward (mean_reward), the run''s pass@k column (mean_pass_at_k, with its k), timing/step (mean_step_s), timing/wait_for_generation_buffer (mean_generation_wait_s), generate/avg_num_tokens (mean_tokens) and async/staleness_mean (mean_staleness). Every row counts (a re-run step counts in each log that ran it).';

CREATE OR REPLACE VIEW "metric_stats" AS
SELECT
    run,
    CASE WHEN contains(metric, '/') THEN split_part(metric, '/', 1) ELSE 'other' END AS family,
    metric,
    -- fsum (compensated summation) keeps the mean at the correctly rounded value, so printed figures round
    -- as they would from the exact mean even when a mean of 4-decimal values falls on a rounding tie
    fsum(value) / count(value) AS mean,
    stddev_samp(value) AS std,
    min(value) AS min,
    max(value) AS max,
    count(value) AS count
FROM metrics_long
GROUP BY run, metric
ORDER BY
    run,
    coalesce(
        list_position(
            ['async', 'generate', 'loss', 'policy', 'reward', 'system', 'timing', 'trainer', 'batch_errors'],
            CASE WHEN contains(metric, '/') THEN split_part(metric, '/', 1) END
        ),
        CASE WHEN contains(metric, '/') THEN 100 ELSE 101 END
    ),
    family,
    metric;

COMMENT ON VIEW "metric_stats" IS 'Per run, metric family (the part of the column name before the first `/`: async, generate, loss, policy, reward, system, timing, trainer, batch_errors, ..., `other` for a key without a `/`) and metric: mean, sample standard deviation (n-1, NULL below two values), min, max and count of the recorded values over every metric row of the run (a re-run step counts once per log, as the parser''s report does). Families in that order, then others by name, `other` last, metrics by name.';

CREATE OR REPLACE VIEW "training_progression" AS
WITH
    picked AS (
        -- per run: which KL-or-entropy and which loss metric it logs (first choice with any value)
        SELECT
            run,
            arg_min(metric, list_position(['policy/policy_kl', 'policy/policy_entropy'], metric))
                FILTER (WHERE metric IN ('policy/policy_kl', 'policy/policy_entropy')) AS kl_metric,
            arg_min(metric, list_position(['loss/final_loss', 'policy/final_loss', 'policy/policy_loss'], metric))
                FILTER (WHERE metric IN ('loss/final_loss', 'policy/final_loss', 'policy/policy_loss')) AS loss_metric
        FROM metrics_long
        GROUP BY run
    )
SELECT
    c.run,
    c.step,
    c.log_file,
    c.reward,
    c.pass_at_k,
    c.k,
    kl.value AS kl_or_entropy,
    p.kl_metric AS kl_or_entropy_metric,
    loss.value AS loss,
    p.loss_metric,
    s."timing/step" AS step_seconds,
    wait.value AS generation_wait_seconds
FROM reward_curve AS c
JOIN steps AS s ON s.run = c.run AND s.step = c.step
LEFT JOIN picked AS p ON p.run = c.run
LEFT JOIN metrics_long AS kl ON kl.run = s.run AND kl.row_no = s.row_no AND kl.metric = p.kl_metric
LEFT JOIN metrics_long AS loss ON loss.run = s.run AND loss.row_no = s.row_no AND loss.metric = p.loss_metric
LEFT JOIN metrics_long AS wait
    ON wait.run = s.run AND wait.row_no = s.row_no AND wait.metric = 'timing/wait_for_generation_buffer'
ORDER BY c.run, c.step;

COMMENT ON VIEW "training_progression" IS 'One row per run and deduplicated step (first-seen row): reward/avg_raw_reward, pass@k and its k (as reward_curve), kl_or_entropy (policy/policy_kl, or policy/policy_entropy for a run that never logs a KL) with the metric it came from, loss (the first of loss/final_loss, policy/final_loss, policy/policy_loss the run logs) with its metric, step_seconds (timing/step) and generation_wait_seconds (timing/wait_for_generation_buffer).';

CREATE OR REPLACE VIEW "progression_rows" AS
WITH
    choice AS (
        SELECT DISTINCT run, k, kl_or_entropy_metric, loss_metric FROM training_progression
    ),
    wide AS (
        SELECT
            l.run,
            l.row_no,
            max(l.value) FILTER (WHERE l.metric = 'reward/avg_pass_at_' || c.k) AS pass_at_k,
            max(l.value) FILTER (WHERE l.metric = c.kl_or_entropy_metric) AS kl_or_entropy,
            max(l.value) FILTER (WHERE l.metric = c.loss_metric) AS loss,
            max(l.value) FILTER (WHERE l.metric = 'trainer/epoch') AS epoch,
            max(l.value) FILTER (WHERE l.metric = 'policy/raw_grad_norm') AS grad_norm,
            max(l.value) FILTER (WHERE l.metric = 'policy/ppo_clip_ratio') AS ppo_clip_ratio,
            max(l.value) FILTER (WHERE l.metric = 'policy/policy_loss') AS policy_loss,
            max(l.value) FILTER (WHERE l.metric = 'policy/log_ratio_abs_mean') AS log_ratio_mean,
            max(l.value) FILTER (WHERE l.metric = 'timing/wait_for_generation_buffer') AS generation_wait_seconds
        FROM metrics_long AS l
        LEFT JOIN choice AS c ON c.run = l.run
        GROUP BY l.run, l.row_no
    )
SELECT
    m.run,
    m.step,
    m.log_file,
    m.row_no,
    m.row_no = s.row_no AS used,
    count(*) OVER (PARTITION BY m.run, m.step) > 1 AS rerun,
    m."reward/avg_raw_reward" AS reward,
    w.pass_at_k,
    w.kl_or_entropy,
    w.loss,
    c.kl_or_entropy_metric,
    c.loss_metric,
    w.epoch,
    w.grad_norm,
    w.ppo_clip_ratio,
    w.policy_loss,
    w.log_ratio_mean,
    m."timing/step" AS step_seconds,
    w.generation_wait_seconds
FROM metric_rows AS m
JOIN steps AS s ON s.run = m.run AND s.step = m.step
LEFT JOIN wide AS w ON w.run = m.run AND w.row_no = m.row_no
LEFT JOIN choice AS c ON c.run = m.run
ORDER BY m.run, m.step, m.row_no;

COMMENT ON VIEW "progression_rows" IS 'Every metric row with a step, for the progression table: run, step, log_file, row_no, used (the first-seen row of its step, the one the deduplicated curve and the checkpoint selector use), rerun (the step was logged more than once), reward, pass_at_k, kl_or_entropy and loss with kl_or_entropy_metric and loss_metric (the metrics training_progression picks for the run), epoch (trainer/epoch), grad_norm (policy/raw_grad_norm), ppo_clip_ratio (policy/ppo_clip_ratio), policy_loss (policy/policy_loss), log_ratio_mean (policy/log_ratio_abs_mean), step_seconds (timing/step) and generation_wait_seconds (timing/wait_for_generation_buffer), NULL where the run does not log the metric.';

CREATE OR REPLACE VIEW "async_health" AS
WITH
    over_rows AS (
        SELECT
            run,
            avg("async/staleness_mean") AS mean_staleness,
            max("async/staleness_max") AS max_staleness,
            avg("async/discard_rate") AS mean_discard_rate
        FROM metric_rows
        GROUP BY run
    ),
    over_steps AS (
        SELECT run, count(*) FILTER (
            WHERE coalesce("async/discarded_count" > 0, "async/discard_rate" > 0)
        ) AS steps_with_discards
        FROM steps
        GROUP BY run
    )
SELECT r.run, r.mean_staleness, r.max_staleness, r.mean_discard_rate, coalesce(s.steps_with_discards, 0) AS steps_with_discards
FROM over_rows AS r
LEFT JOIN over_steps AS s ON s.run = r.run
ORDER BY r.run;

COMMENT ON VIEW "async_health" IS 'Fully async trainer health per run: mean of async/staleness_mean and max of async/staleness_max over every metric row, mean async/discard_rate (0-1), and deduplicated steps that discarded samples.';

CREATE OR REPLACE VIEW "best_checkpoint" AS
WITH per_run AS (
    SELECT
        run,
        count(*) FILTER (WHERE eligible) AS eligible_steps,
        max(step) FILTER (WHERE ema IS NOT NULL) AS last_step
    FROM checkpoint_ema
    GROUP BY run
)
SELECT
    s.run,
    b.step,
    b.ema,
    b.reward,
    s.save_every,
    coalesce(p.eligible_steps, 0) AS eligible_steps,
    CASE
        WHEN b.step IS NOT NULL THEN printf(
            'highest %d-step EMA among %d eligible steps (multiples of %d from step %d)',
            CAST(coalesce(getvariable('span'), 5) AS INTEGER), p.eligible_steps, s.save_every, 2 * s.save_every
        )
        WHEN p.last_step IS NULL THEN 'no step has a reward (reward/avg_raw_reward is empty or absent)'
        ELSE printf(
            'no eligible step: eligible steps are multiples of %d from step %d, and the last step with a reward is %d',
            s.save_every, 2 * s.save_every, p.last_step
        )
    END AS reason
FROM checkpoint_settings AS s
LEFT JOIN checkpoint_ema AS b ON b.run = s.run AND b.is_best
LEFT JOIN per_run AS p ON p.run = s.run
ORDER BY s.run;

COMMENT ON VIEW "best_checkpoint" IS 'The checkpoint the EMA selector picks per run: among eligible steps (multiples of save_every from 2*save_every on, the first save is skipped) the highest EMA of reward/avg_raw_reward, ties to the earliest step. save_every defaults to the config''s trainer.hf_save_interval, else 20.';

CREATE OR REPLACE VIEW "trial_rows" AS
SELECT
    t.run,
    t.row_no,
    t.task_name,
    t.trial_name,
    CAST(t.n_episodes AS BIGINT) AS n_episodes,
    CAST(t.n_input_tokens AS BIGINT) AS n_input_tokens,
    CAST(t.n_output_tokens AS BIGINT) AS n_output_tokens,
    coalesce(nullif(trim(t.exception_type), ''), 'No exception') AS exception_type,
    t.reward,
    CASE WHEN t.reward > 0 THEN 'Success' WHEN t.reward = 0 THEN 'Failure' END AS outcome,
    t.agent_duration_sec,
    t.trial_duration,
    t.environment_setup_duration,
    t.agent_setup_duration,
    t.agent_execution_duration,
    t.verifier_duration,
    t.exception_message,
    -- result.json stamps: with an offset (`...Z`, `+02:00`) read as that instant in UTC, without one as written
    CASE
        WHEN regexp_matches(t.started_at, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN timezone('UTC', try_cast(t.started_at AS TIMESTAMPTZ))
        ELSE try_cast(t.started_at AS TIMESTAMP)
    END AS started_at,
    CASE
        WHEN regexp_matches(t.finished_at, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN timezone('UTC', try_cast(t.finished_at AS TIMESTAMPTZ))
        ELSE try_cast(t.finished_at AS TIMESTAMP)
    END AS finished_at
FROM (
    -- explicit columns: a new CSV column never changes this view
    SELECT
        run, row_no, task_name, trial_name, n_episodes, n_input_tokens, n_output_tokens, exception_type, reward,
        agent_duration_sec, trial_duration, environment_setup_duration, agent_setup_duration,
        agent_execution_duration, verifier_duration,
        CAST(NULL AS VARCHAR) AS exception_message, CAST(NULL AS VARCHAR) AS started_at,
        CAST(NULL AS VARCHAR) AS finished_at
    FROM trials_src
    -- runs without a trials CSV: Harbor's result.json files (harbor_trials_src lists no run that has a CSV),
    -- the trials only (a row with a problem is a file that is no trial: see rlsql check)
    UNION ALL
    SELECT
        run, row_no, task_name, trial_name, n_episodes, n_input_tokens, n_output_tokens, exception_type, reward,
        agent_duration_sec, trial_duration, environment_setup_duration, agent_setup_duration,
        agent_execution_duration, verifier_duration, exception_message, started_at, finished_at
    FROM harbor_trials_src
    WHERE problem IS NULL
) AS t;

COMMENT ON VIEW "trial_rows" IS 'One row per Harbor trial, from the run''s trials CSV, else from its trace_jobs/*/result.json, without the exception routing (the `trials` view adds it): run, row_no (CSV order, sorted trial folder names for result.json files), task and trial names, n_episodes (turns), tokens, exception_type (`No exception` when empty), reward, outcome (Success: reward > 0, Failure: reward = 0), durations, then, read from result.json only (NULL for a CSV), exception_message, started_at and finished_at. Queries that aggregate read this view and route per exception type afterwards, not per trial.';

CREATE OR REPLACE VIEW "reward_summary" AS
SELECT
    f.run,
    coalesce(t.trials, 0) AS trials,
    coalesce(t.trials_with_reward, 0) AS trials_with_reward,
    t.mean_reward,
    t.success_rate,
    coalesce(t.trials_with_turns, 0) AS trials_with_turns
-- every run with trials (a CSV, or Harbor's result.json files) has a row, even without a usable trial
FROM (SELECT DISTINCT run FROM run_files WHERE artifact IN ('trials', 'harbor')) AS f
-- aggregate first, join the few runs after: count(*), not count(row_no), so no row numbering is computed
LEFT JOIN (
    SELECT
        run,
        count(*) AS trials,
        count(reward) AS trials_with_reward,
        avg(reward) AS mean_reward,
        avg(CASE WHEN reward > 0 THEN 1.0 WHEN reward IS NOT NULL THEN 0.0 END) AS success_rate,
        count(n_episodes) AS trials_with_turns
    FROM trial_rows
    GROUP BY run
) AS t ON t.run = f.run
ORDER BY f.run;

COMMENT ON VIEW "reward_summary" IS 'Verifier rewards per run: all trials, trials with a reward, their mean reward, success rate (share with reward > 0, 0-1) and trials with turns.';

CREATE OR REPLACE VIEW "compare_runs" AS
WITH
    step_figures AS (
        SELECT run, count(*) AS steps, avg("timing/step") AS mean_step_time_s
        FROM steps
        GROUP BY run
    ),
    ema_figures AS (
        -- reward_curve gives every deduplicated step its EMA (NULL where the step has no reward)
        SELECT
            run,
            arg_max(ema, step) AS final_ema,
            max(ema) AS best_ema,
            -- the step ranked first by EMA, ties to the earliest (a window rank: no ordered first())
            min(step) FILTER (WHERE ema_rank = 1) AS best_ema_step
        FROM (
            SELECT run, step, ema, row_number() OVER (PARTITION BY run ORDER BY ema DESC, step) AS ema_rank
            FROM reward_curve
            WHERE ema IS NOT NULL
        ) AS ranked
        GROUP BY run
    ),
    exception_figures AS (
        SELECT
            run,
            avg(CASE WHEN exception_type = 'AgentTimeoutError' THEN 1.0 ELSE 0.0 END) AS timeout_rate,
            avg(CASE WHEN exception_type = 'ContextLengthExceededError' THEN 1.0 ELSE 0.0 END) AS context_length_rate
        FROM trial_rows
        GROUP BY run
    ),
    config_figures AS (
        -- config_diff lists, for every run with a config, each key that differs (a key a run lacks
        -- differs too, its value is NULL there)
        SELECT
            c.run,
            coalesce(
                string_agg(d.key || '=' || coalesce(d.value, '<missing>'), ('' || chr(59) || ' ') ORDER BY d.key),
                ''
            ) AS differing_config
        FROM (SELECT DISTINCT run FROM run_files WHERE artifact = 'config') AS c
        LEFT JOIN config_diff AS d ON d.run = c.run
        GROUP BY c.run
    )
SELECT
    r.run,
    s.steps,
    rs.trials,
    rs.success_rate,
    rs.mean_reward,
    e.final_ema,
    e.best_ema,
    e.best_ema_step,
    s.mean_step_time_s,
    x.timeout_rate,
    x.context_length_rate,
    c.differing_config
FROM runs AS r
LEFT JOIN step_figures AS s ON s.run = r.run
LEFT JOIN reward_summary AS rs ON rs.run = r.run
LEFT JOIN ema_figures AS e ON e.run = r.run
LEFT JOIN exception_figures AS x ON x.run = r.run
LEFT JOIN config_figures AS c ON c.run = r.run
ORDER BY r.run;

COMMENT ON VIEW "compare_runs" IS 'One row per run with its headline figures side by side: deduplicated steps, trials, success rate and mean reward (over trials with a reward), the EMA of reward/avg_raw_reward at the last step and at its best step (ties to the earliest), the mean timing/step over deduplicated steps, the shares of all trials ending in AgentTimeoutError and ContextLengthExceededError, and the rl_config.yaml keys whose values differ between the runs (`key=value` pairs sorted by key, joined by a semicolon and a space).';

CREATE OR REPLACE VIEW "span_seconds" AS
SELECT run, log_file, step, row_no, substr(metric, length('timing/') + 1) AS span, value AS seconds
FROM metrics_long
WHERE starts_with(metric, 'timing/');

COMMENT ON VIEW "span_seconds" IS 'One row per metric row and recorded timing span: run, log_file, step, row_no, span (the timing/ column without its prefix), seconds.';

CREATE OR REPLACE VIEW "timing_spans" AS
SELECT * FROM (
    VALUES
        ('step', NULL, 'step'),
        ('wait_for_generation_buffer', 'step', 'step'),
        ('convert_to_training_input', 'step', 'step'),
        ('run_training', 'step', 'step'),
        ('sync_weights', 'step', 'step'),
        ('generate', 'step', 'step'),
        ('postprocess_generator_output', 'step', 'step'),
        ('fwd_logprobs_values_reward', 'run_training', 'step'),
        ('apply_reward_kl_penalty', 'run_training', 'step'),
        ('compute_advantages_and_returns', 'run_training', 'step'),
        ('train_critic_and_policy', 'run_training', 'step'),
        ('policy_train', 'train_critic_and_policy', 'step'),
        ('critic_train', 'train_critic_and_policy', 'step'),
        ('policy_critic_overlap_train', 'train_critic_and_policy', 'step'),
        ('save_checkpoints', NULL, 'outside'),
        ('cleanup_old_checkpoints', 'save_checkpoints', 'outside'),
        ('save_hf_model', NULL, 'outside'),
        ('eval', NULL, 'outside'),
        ('update_ref_with_policy', NULL, 'outside'),
        ('init_weight_sync_state', NULL, 'outside')
) AS t(span, parent, region);

COMMENT ON VIEW "timing_spans" IS 'The trainer''s declared timing spans: span, its declared parent (a span''s seconds include its children) and region (`step` inside a training step, `outside` between steps). From the SkyRL fully async trainer.';

CREATE OR REPLACE VIEW "span_tree" AS
WITH RECURSIVE
    ancestors(span, ancestor, depth) AS (
        SELECT span, parent, 1 FROM timing_spans WHERE parent IS NOT NULL
        UNION ALL
        SELECT a.span, d.parent, a.depth + 1
        FROM ancestors AS a
        JOIN timing_spans AS d ON d.span = a.ancestor
        WHERE d.parent IS NOT NULL
    ),
    recorded AS (
        SELECT DISTINCT run, span FROM span_seconds
    )
SELECT
    r.run,
    r.span,
    arg_min(up.span, a.depth) FILTER (WHERE up.span IS NOT NULL) AS parent,
    coalesce(any_value(d.region), 'undeclared') AS region
FROM recorded AS r
LEFT JOIN timing_spans AS d ON d.span = r.span
LEFT JOIN ancestors AS a ON a.span = r.span
LEFT JOIN recorded AS up ON up.run = r.run AND up.span = a.ancestor
GROUP BY r.run, r.span;

COMMENT ON VIEW "span_tree" IS 'Each run''s recorded timing spans placed in the declared tree: run, span, parent (the nearest recorded declared ancestor, NULL for a root), region (step, outside, or undeclared).';

CREATE OR REPLACE VIEW "timing_breakdown" AS
WITH RECURSIVE
    stats AS (
        SELECT run, span, avg(seconds) AS mean_seconds, count(*) AS steps
        FROM span_seconds
        GROUP BY run, span
    ),
    grid AS (
        -- every metric row x every recorded span with a parent: the span's and the parent's seconds
        SELECT t.run, t.span, m.row_no, s.seconds, p.seconds AS parent_seconds
        FROM span_tree AS t
        JOIN metric_rows AS m ON m.run = t.run
        LEFT JOIN span_seconds AS s ON s.run = t.run AND s.row_no = m.row_no AND s.span = t.span
        LEFT JOIN span_seconds AS p ON p.run = t.run AND p.row_no = m.row_no AND p.span = t.parent
        WHERE t.parent IS NOT NULL
    ),
    shares AS (
        SELECT run, span, avg(coalesce(seconds, 0) / parent_seconds) FILTER (WHERE parent_seconds > 0) AS share
        FROM grid
        GROUP BY run, span
    ),
    nodes AS (
        SELECT
            t.run,
            t.span,
            t.parent,
            CASE WHEN t.parent IS NOT NULL THEN t.parent
                 WHEN t.region = 'step' THEN '-'
                 WHEN t.region = 'outside' THEN 'outside step'
                 ELSE 'not declared' END AS within,
            CASE WHEN t.parent IS NOT NULL THEN NULL
                 WHEN t.region = 'step' THEN 0
                 WHEN t.region = 'outside' THEN 2
                 ELSE 3 END AS section,
            st.mean_seconds,
            sh.share AS share_of_within,
            st.steps
        FROM span_tree AS t
        JOIN stats AS st ON st.run = t.run AND st.span = t.span
        LEFT JOIN shares AS sh ON sh.run = t.run AND sh.span = t.span
    ),
    ranked AS (
        SELECT *, row_number() OVER (
            PARTITION BY run, coalesce(parent, ''), section ORDER BY mean_seconds DESC, span
        ) AS sibling_rank
        FROM nodes
    ),
    ordered AS (
        SELECT run, span, [section, sibling_rank] AS path FROM ranked WHERE parent IS NULL
        UNION ALL
        SELECT c.run, c.span, list_append(o.path, c.sibling_rank)
        FROM ordered AS o
        JOIN ranked AS c ON c.run = o.run AND c.parent = o.span
    ),
    residuals AS (
        -- per row where step ran: step seconds its direct children do not cover
        SELECT
            st.run,
            st.seconds - coalesce(sum(c.seconds), 0) AS residual,
            (st.seconds - coalesce(sum(c.seconds), 0)) / nullif(st.seconds, 0) AS residual_share
        FROM span_seconds AS st
        LEFT JOIN span_tree AS t ON t.run = st.run AND t.parent = 'step'
        LEFT JOIN span_seconds AS c ON c.run = st.run AND c.row_no = st.row_no AND c.span = t.span
        WHERE st.span = 'step'
        GROUP BY st.run, st.row_no, st.seconds
    ),
    remainder AS (
        SELECT
            run,
            CASE WHEN avg(residual) >= 0 THEN 'unattributed' ELSE 'overlap' END AS span,
            'step' AS within,
            abs(avg(residual)) AS mean_seconds,
            CASE WHEN avg(residual) >= 0 THEN avg(residual_share) END AS share_of_within,
            count(*) AS steps,
            [1] AS path
        FROM residuals
        GROUP BY run
    )
SELECT run, span, within, mean_seconds, share_of_within, steps
FROM (
    SELECT r.run, r.span, r.within, r.mean_seconds, r.share_of_within, r.steps, o.path
    FROM ranked AS r
    JOIN ordered AS o ON o.run = r.run AND o.span = r.span
    UNION ALL
    SELECT run, span, within, mean_seconds, share_of_within, steps, path
    FROM remainder
)
ORDER BY run, path;

COMMENT ON VIEW "timing_breakdown" IS 'Where a training step''s time goes, as a containment tree over every metric row: per span its mean seconds over the rows where it ran and its mean share of its parent (a row without the span counts 0), depth-first from step (largest first), then the step time no child covers (unattributed, or overlap when children sum past the step), then spans outside the step, then undeclared spans.';

CREATE OR REPLACE VIEW "run_summary" AS
WITH
    time_figures AS (
        SELECT run, sum("timing/step") AS training_time_s
        FROM metric_rows
        GROUP BY run
    ),
    slowest AS (
        SELECT
            run,
            arg_max(span, [mean_seconds, -rank]) AS slowest_span,
            max(mean_seconds) AS slowest_span_mean_s,
            arg_max(share_of_within, [mean_seconds, -rank]) AS slowest_span_share
        FROM (
            SELECT *, dense_rank() OVER (PARTITION BY run ORDER BY span) AS rank
            FROM timing_breakdown
            WHERE within = 'step' AND span NOT IN ('unattributed', 'overlap')
        )
        GROUP BY run
    )
SELECT
    c.run,
    c.steps,
    c.trials,
    rs.trials_with_reward,
    c.success_rate,
    c.mean_reward,
    c.final_ema,
    c.best_ema,
    c.best_ema_step,
    b.step AS best_checkpoint_step,
    b.ema AS best_checkpoint_ema,
    c.mean_step_time_s,
    t.training_time_s,
    c.timeout_rate,
    c.context_length_rate,
    a.mean_staleness,
    s.slowest_span,
    s.slowest_span_mean_s,
    s.slowest_span_share
FROM compare_runs AS c
LEFT JOIN reward_summary AS rs ON rs.run = c.run
LEFT JOIN best_checkpoint AS b ON b.run = c.run
LEFT JOIN time_figures AS t ON t.run = c.run
LEFT JOIN async_health AS a ON a.run = c.run
LEFT JOIN slowest AS s ON s.run = c.run
ORDER BY c.run;

COMMENT ON VIEW "run_summary" IS 'One row per run with the headline figures a reader wants first: the figures of compare_runs (steps, trials, success_rate, mean_reward, final_ema, best_ema, best_ema_step, mean_step_time_s, timeout_rate, context_length_rate, rates 0-1 of all trials), trials_with_reward, the best checkpoint''s step and EMA (best_checkpoint: an eligible step), training_time_s (timing/step summed over every metric row: a re-run step took its time twice), mean_staleness (async_health), and the slowest direct child of step by mean seconds (timing_breakdown, unattributed time excluded, ties by name) with its mean seconds and mean share of the step.';

CREATE OR REPLACE VIEW "run_table_map" AS
WITH
    chosen AS (
        SELECT DISTINCT trim(k) AS key
        FROM (SELECT unnest(string_split(CAST(coalesce(getvariable('keys'), CAST(NULL AS VARCHAR)) AS VARCHAR), ',')) AS k)
        WHERE trim(k) <> ''
        UNION
        SELECT DISTINCT key FROM config_diff WHERE CAST(coalesce(getvariable('keys'), CAST(NULL AS VARCHAR)) AS VARCHAR) IS NULL
    ),
    first_values AS (
        SELECT run, key, arg_min(coalesce(value, 'null'), ordinal) AS value
        FROM config
        GROUP BY run, key
    ),
    -- the grid is built over `runs` (run_summary's rows are runs' rows): naming run_summary twice made
    -- DuckDB compute it twice, two thirds of this view's time
    grid AS (
        SELECT s.run, k.key, v.value
        FROM runs AS s
        CROSS JOIN chosen AS k
        LEFT JOIN first_values AS v ON v.run = s.run AND v.key = k.key
    ),
    maps AS (
        SELECT run, map_from_entries(list({'key': key, 'value': value} ORDER BY key)) AS config
        FROM grid
        GROUP BY run
    )
SELECT s.*, coalesce(m.config, MAP {}::MAP(VARCHAR, VARCHAR)) AS config
FROM run_summary AS s
LEFT JOIN maps AS m ON m.run = s.run
ORDER BY s.run;

COMMENT ON VIEW "run_table_map" IS 'The cross-run table with a fixed set of columns: one row per run with run_summary''s headline figures and `config`, a MAP from rl_config.yaml key (dotted path) to the run''s value (text, `null` for a YAML null, NULL where the run has no such key or no config). The keys are those whose values differ between the runs (config_diff), or the `keys` parameter''s (a variable, so it can change after the view exists). The named query run_table gives the same table with one column per key instead of the MAP.';

CREATE OR REPLACE VIEW "step_signals" AS
SELECT
    s.run,
    s.step,
    max(l.value) FILTER (WHERE l.metric = 'policy/policy_entropy') AS entropy,
    max(l.value) FILTER (WHERE l.metric = 'policy/raw_grad_norm') AS grad_norm,
    max(l.value) FILTER (WHERE l.metric = 'policy/log_ratio_abs_mean') AS log_ratio_mean,
    max(l.value) FILTER (WHERE l.metric = 'batch_errors/avg_AgentTimeoutError') AS timeouts_per_batch,
    max(l.value) FILTER (WHERE l.metric = 'batch_errors/avg_ContextLengthExceededError') AS context_length_per_batch
FROM steps AS s
LEFT JOIN metrics_long AS l ON l.run = s.run AND l.row_no = s.row_no
GROUP BY s.run, s.step
ORDER BY s.run, s.step;

COMMENT ON VIEW "step_signals" IS 'Per run and deduplicated step (first-seen row), the signals a reader scans for trouble: entropy (policy/policy_entropy), grad_norm (policy/raw_grad_norm), log_ratio_mean (policy/log_ratio_abs_mean), and the batch errors per rollout batch, timeouts_per_batch (batch_errors/avg_AgentTimeoutError) and context_length_per_batch (batch_errors/avg_ContextLengthExceededError), NULL where not logged.';

CREATE OR REPLACE VIEW "step_time_stack" AS
WITH
    children AS (
        SELECT s.run, s.step, s.row_no, t.span, x.seconds
        FROM steps AS s
        JOIN span_tree AS t ON t.run = s.run AND t.parent = 'step'
        JOIN span_seconds AS x ON x.run = s.run AND x.row_no = s.row_no AND x.span = t.span
    ),
    totals AS (
        SELECT s.run, s.step, s.row_no, s."timing/step" AS step_seconds
        FROM steps AS s
    ),
    residual AS (
        SELECT t.run, t.step, 'unattributed' AS span, t.step_seconds - coalesce(sum(c.seconds), 0) AS seconds
        FROM totals AS t
        LEFT JOIN children AS c ON c.run = t.run AND c.row_no = t.row_no
        WHERE t.step_seconds IS NOT NULL
        GROUP BY t.run, t.step, t.step_seconds
    )
SELECT u.run, u.step, u.span, u.seconds, t.step_seconds
FROM (
    SELECT run, step, span, seconds, 0 AS part FROM children
    UNION ALL
    SELECT run, step, span, seconds, 1 AS part FROM residual WHERE seconds > 0
) AS u
JOIN totals AS t ON t.run = u.run AND t.step = u.step
ORDER BY u.run, u.step, u.part, u.span;

COMMENT ON VIEW "step_time_stack" IS 'Where each deduplicated step''s time went, for a stacked chart: run, step, span (each recorded direct child of step in the span tree, then `unattributed` for the step time no child covers when positive), seconds, step_seconds (timing/step of that row).';

CREATE OR REPLACE VIEW "timing_table" AS
WITH
    shares AS (
        SELECT t.run, t.span, avg(coalesce(x.seconds, 0) / st.seconds) AS share_of_step
        FROM span_tree AS t
        JOIN span_seconds AS st ON st.run = t.run AND st.span = 'step' AND st.seconds > 0
        LEFT JOIN span_seconds AS x ON x.run = t.run AND x.row_no = st.row_no AND x.span = t.span
        WHERE t.span <> 'step'
        GROUP BY t.run, t.span
    )
SELECT
    b.run,
    b.span,
    b.within,
    b.mean_seconds,
    b.share_of_within,
    CASE WHEN b.span = 'step' THEN 1.0
         WHEN b.span = 'unattributed' AND b.within = 'step' THEN b.share_of_within
         ELSE s.share_of_step END AS share_of_step,
    b.steps
FROM timing_breakdown AS b
LEFT JOIN shares AS s ON s.run = b.run AND s.span = b.span AND b.span NOT IN ('unattributed', 'overlap');

COMMENT ON VIEW "timing_table" IS 'timing_breakdown with share_of_step beside share_of_within: for every span the mean over the rows where step ran (and took time) of the span''s seconds over the step''s (a row without the span counts 0), for spans nested in step and outside it alike (an outside span''s share can pass 1), unattributed takes its share_of_within (its parent is step), overlap has none.';

CREATE OR REPLACE VIEW "tool_calls" AS
SELECT run, trial_name, segment, step_id, turn, call_index, tool_call_id, function_name, arguments,
    observation_chars, copied
FROM tool_calls_src
ORDER BY run, trial_name, segment, step_id, step_index, call_index;

COMMENT ON VIEW "tool_calls" IS 'One row per tool call of every trial''s agent trajectory (the step''s `tool_calls`, in every segment): the step it belongs to, the call''s position, its id, function and arguments as canonical JSON text (keys sorted at every depth, no spaces, non-ASCII kept, as Python''s json.dumps(a, sort_keys=True, separators=(",", ":"), ensure_ascii=False): two calls whose arguments differ only in key order have the same text), the characters of the observation it got, and whether the step is copied context. Ordered by run, trial_name, segment, step_id, call_index.';

CREATE OR REPLACE VIEW "trajectory_steps" AS
SELECT run, trial_name, segment, step_id, turn, source, ts, model_name, message_chars, reasoning_chars, tool_calls,
    prompt_tokens, completion_tokens, cached_tokens, cost_usd, copied
FROM trajectory_steps_src
WHERE problem IS NULL
ORDER BY run, trial_name, segment, step_id, step_index;

COMMENT ON VIEW "trajectory_steps" IS 'One row per step of every trial''s agent trajectory (ATIF: `trace_jobs/<trial>/agent/trajectory.json` is segment 0, `trajectory.cont-N.json` segment N), whether the run''s trials come from a trials CSV or from result.json files: who spoke (source), the agent''s turn, when (UTC), the model, the message''s and reasoning''s length in characters, the number of tool calls, the tokens and cost of the step, and whether it is context copied from an earlier segment. Damaged files are left out (a warning names each, `rlsql check` lists them). Ordered by run, trial_name, segment, step_id.';

CREATE OR REPLACE VIEW "trials" AS
SELECT
    t.* EXCLUDE (exception_message, started_at, finished_at),
    route_exception(t.exception_type, r) AS treatment,
    CASE
        WHEN treatment = 'passthrough' AND t.reward IS NULL THEN 'mask'
        ELSE treatment
    END AS effective_treatment,
    t.exception_message,
    t.started_at,
    t.finished_at
FROM trial_rows AS t
LEFT JOIN exception_routing AS r ON r.run = t.run;

COMMENT ON VIEW "trials" IS 'One row per Harbor trial, from the run''s trials CSV, else from its trace_jobs/*/result.json: run, row_no (CSV order, sorted trial folder names for result.json files), task and trial names, n_episodes (turns), tokens, exception_type (`No exception` when empty), reward, outcome (Success: reward > 0, Failure: reward = 0), durations, treatment (the route the config gives the exception type) and effective_treatment (a passthrough trial without a reward is masked), then, read from result.json only (NULL for a CSV), exception_message, started_at and finished_at.';

CREATE OR REPLACE VIEW "turn_histogram" AS
SELECT run, n_episodes AS turns, count(*) AS trials
FROM trial_rows
WHERE n_episodes IS NOT NULL
GROUP BY run, n_episodes
ORDER BY run, turns;

COMMENT ON VIEW "turn_histogram" IS 'How many trials took each number of agent turns, per run: run, turns (n_episodes), trials, over the trials with turns, turns ascending (counts of zero are not listed).';

CREATE OR REPLACE VIEW "vllm_seconds" AS
WITH stamped AS (
    SELECT
        v.*,
        r.vllm_base_date AS base_date,
        try_strptime(CAST(year(r.vllm_base_date) AS VARCHAR) || '-' || v.datetime_str, '%Y-%m-%d %H:%M:%S')
            AS same_year_ts
    FROM vllm_src AS v
    JOIN runs AS r ON r.run = v.run
)
SELECT
    run,
    log_file,
    row_no,
    datetime_str,
    CASE
        WHEN CAST(same_year_ts AS DATE) > base_date + 1
            THEN try_strptime(CAST(year(base_date) - 1 AS VARCHAR) || '-' || datetime_str, '%Y-%m-%d %H:%M:%S')
        ELSE same_year_ts
    END AS ts,
    -- counts are whole numbers: BIGINT, though pandas may have written them as `3.0`
    CAST(n_engines_reporting AS BIGINT) AS n_engines_reporting,
    CAST(unique_ips AS BIGINT) AS unique_ips,
    total_prompt_throughput_tokens_per_sec,
    total_generation_throughput_tokens_per_sec,
    CAST(total_running_requests AS BIGINT) AS total_running_requests,
    CAST(total_waiting_requests AS BIGINT) AS total_waiting_requests,
    avg_prompt_throughput_per_engine,
    avg_generation_throughput_per_engine,
    avg_running_requests_per_engine,
    avg_waiting_requests_per_engine,
    avg_gpu_kv_cache_usage_pct,
    avg_prefix_cache_hit_rate_pct,
    CAST(min_running_requests AS BIGINT) AS min_running_requests,
    CAST(max_running_requests AS BIGINT) AS max_running_requests,
    min_generation_throughput,
    max_generation_throughput
FROM stamped;

COMMENT ON VIEW "vllm_seconds" IS 'One row per (run, log_file, second) of vLLM engine stats with a real timestamp `ts`: the year comes from the file''s parse date, and a month-day more than one day after that date belongs to the year before (a run parsed in January that ran in December). Order by ts, never by datetime_str.';

CREATE OR REPLACE VIEW "vllm_series" AS
WITH sliced AS (
    SELECT
        run,
        log_file,
        ts,
        avg_generation_throughput_per_engine,
        avg_running_requests_per_engine,
        avg_waiting_requests_per_engine,
        avg_prefix_cache_hit_rate_pct,
        ntile(2000) OVER (PARTITION BY run, log_file ORDER BY ts) AS slice
    FROM vllm_seconds
    WHERE ts IS NOT NULL
)
SELECT
    run,
    log_file,
    min(ts) AS ts,
    count(*) AS seconds,
    avg(avg_generation_throughput_per_engine) AS avg_generation_throughput_per_engine,
    avg(avg_running_requests_per_engine) AS avg_running_requests_per_engine,
    avg(avg_waiting_requests_per_engine) AS avg_waiting_requests_per_engine,
    avg(avg_prefix_cache_hit_rate_pct) AS avg_prefix_cache_hit_rate_pct
FROM sliced
GROUP BY run, log_file, slice
ORDER BY run, log_file, ts;

COMMENT ON VIEW "vllm_series" IS 'The vLLM engine series the report draws, per run and log over real time: at most 2,000 points per log, each the mean of the seconds in its slice of time (a log with fewer seconds keeps every second): run, log_file, ts (the slice''s first second), seconds (in the slice), generation throughput, running and waiting requests per engine, prefix-cache hit rate.';

CREATE OR REPLACE VIEW "exception_distribution" AS
WITH per_type AS (
    -- count first, route after: the routing is needed once per (run, exception type), not per trial
    SELECT run, exception_type, count(*) AS trials, min(row_no) AS first_row
    FROM trial_rows
    GROUP BY run, exception_type
)
SELECT
    p.run,
    p.exception_type,
    p.trials,
    100.0 * p.trials / sum(p.trials) OVER (PARTITION BY p.run) AS pct,
    route_exception(p.exception_type, r) AS treatment
FROM per_type AS p
LEFT JOIN exception_routing AS r ON r.run = p.run
ORDER BY p.run, p.trials DESC, p.first_row;

COMMENT ON VIEW "exception_distribution" IS 'Trials per exception type (`No exception` for none) with their percent of the run''s trials and the treatment the run''s config routes the type to, most frequent first, ties in order of first appearance in the CSV.';

CREATE OR REPLACE VIEW "exception_treatment" AS
WITH
    per_type AS (
        -- count first, route after: the routing is needed once per (run, exception type, has a reward)
        SELECT run, exception_type, reward IS NULL AS no_reward, count(*) AS trials
        FROM trial_rows
        GROUP BY run, exception_type, reward IS NULL
    ),
    routed AS (
        SELECT
            p.*,
            route_exception(p.exception_type, r) AS configured
        FROM per_type AS p
        LEFT JOIN exception_routing AS r ON r.run = p.run
    )
SELECT
    run,
    CASE WHEN configured = 'passthrough' AND no_reward THEN 'mask' ELSE configured END AS treatment,
    sum(trials) AS trials,
    100.0 * sum(trials) / sum(sum(trials)) OVER (PARTITION BY run) AS pct,
    array_to_string(list_sort(list(DISTINCT exception_type)), ', ') AS exception_types
FROM routed
GROUP BY run, CASE WHEN configured = 'passthrough' AND no_reward THEN 'mask' ELSE configured END
ORDER BY run, list_position(['none', 'passthrough', 'mask', 'zero'], treatment);

COMMENT ON VIEW "exception_treatment" IS 'Trials per effective treatment (none, passthrough, mask, zero, a passthrough trial without a reward counts as mask) with their percent of the run''s trials and the exception types routed there.';

CREATE OR REPLACE VIEW "looping_trials" AS
WITH calls AS (
    SELECT run, trial_name, function_name, arguments, turn
    FROM tool_calls
    WHERE turn IS NOT NULL  -- agent steps that are not copied context
),
repeated AS (
    SELECT
        run, trial_name, function_name, arguments,
        count(*) AS repeats,
        -- a trial's turns grow with (segment, step_id): the first call's turn is the least, the last's the greatest
        min(turn) AS first_turn,
        max(turn) AS last_turn
    FROM calls
    GROUP BY run, trial_name, function_name, arguments
    HAVING count(*) >= CAST(coalesce(getvariable('min_repeats'), 3) AS INTEGER)
)
SELECT
    r.run,
    r.trial_name,
    coalesce(t.outcome, 'No reward') AS outcome,
    t.exception_type,
    t.n_episodes,
    r.function_name,
    r.arguments,
    r.repeats,
    r.first_turn,
    r.last_turn
FROM repeated AS r
LEFT JOIN trial_rows AS t ON t.run = r.run AND t.trial_name = r.trial_name
ORDER BY r.run, r.repeats DESC, r.trial_name, r.function_name, r.arguments;

COMMENT ON VIEW "looping_trials" IS 'Trials that repeat themselves: each call (the same function with the same canonical arguments) a trial''s agent made at least `min_repeats` times over all its segments, with the trial''s outcome, exception and turns (from the trials view), how many times, and the turns of the first and the last. Copied-context steps are left out. Ordered by run, repeats descending, trial_name, function_name, arguments.';

CREATE OR REPLACE VIEW "run_overview" AS
SELECT
    run,
    log_file,
    max(step) AS total_steps,
    count(*) AS metric_blocks,
    avg("reward/avg_raw_reward") AS mean_reward,
    max("reward/avg_raw_reward") AS max_reward,
    sum("timing/step") AS total_time_s,
    max(step) AS max_step,
    count(DISTINCT step) AS distinct_steps
FROM metric_rows
GROUP BY run, log_file
ORDER BY run, log_file;

COMMENT ON VIEW "run_overview" IS 'One row per run and log: the log''s highest global step, its metric rows, the mean and max of reward/avg_raw_reward over its rows, and the summed timing/step seconds. Version 2 adds max_step (the same highest step under an honest name) and distinct_steps (how many different steps the log holds), after the v1 columns, which stay as they were.';

CREATE OR REPLACE VIEW "run_table" AS
WITH
    first_values AS (
        SELECT run, key, arg_min(coalesce(value, 'null'), ordinal) AS value
        FROM config
        WHERE false
        GROUP BY run, key
    ),
    wide AS (
        SELECT
            run
        FROM first_values
        GROUP BY run
    )
SELECT
    s.*
FROM run_summary AS s
LEFT JOIN wide AS w ON w.run = s.run
ORDER BY s.run;

COMMENT ON VIEW "run_table" IS 'The cross-run table: one row per run with run_summary''s headline figures, then one column per rl_config.yaml key (dotted path) whose value differs between the runs (config_diff), or per key of the `keys` parameter, sorted by key: the run''s value as text. The config columns depend on the runs: rlsql works them out from the configs when it creates the query (`keys` is read then, not at each query), so a BI tool or notebook can plot success_rate against trainer.policy.optimizer_config.lr directly. The same table with the keys in one MAP column: the view run_table_map.';

CREATE OR REPLACE VIEW "step_timing" AS
SELECT
    s.run,
    s.step,
    s.log_file,
    s.span,
    s.seconds,
    s.seconds / nullif(total.seconds, 0) AS share_of_step
FROM span_seconds AS s
LEFT JOIN span_seconds AS total ON total.run = s.run AND total.row_no = s.row_no AND total.span = 'step'
ORDER BY s.run, s.step, s.log_file, s.span;

COMMENT ON VIEW "step_timing" IS 'Seconds of every recorded timing span in every metric row (a re-run step appears once per log), with its share of that row''s timing/step.';

CREATE OR REPLACE VIEW "token_usage" AS
WITH per_trial AS (
    -- each trial's figures first: the join to the trials is then one row per trial
    SELECT
        run, trial_name,
        count(*) FILTER (WHERE source = 'agent') AS agent_steps,
        sum(prompt_tokens) FILTER (WHERE source = 'agent') AS prompt_tokens,
        sum(completion_tokens) FILTER (WHERE source = 'agent') AS completion_tokens,
        sum(cached_tokens) FILTER (WHERE source = 'agent' AND prompt_tokens IS NOT NULL) AS cached_with_prompt,
        sum(prompt_tokens) FILTER (WHERE source = 'agent' AND cached_tokens IS NOT NULL) AS prompt_with_cached,
        max(prompt_tokens) FILTER (WHERE source = 'agent') AS max_step_prompt_tokens
    FROM trajectory_steps
    WHERE NOT copied
    GROUP BY run, trial_name
),
with_outcome AS (
    SELECT p.*, coalesce(t.outcome, 'No reward') AS outcome
    FROM per_trial AS p
    LEFT JOIN trial_rows AS t ON t.run = p.run AND t.trial_name = p.trial_name
)
SELECT
    run,
    outcome,
    count(*) AS trials,
    CAST(sum(agent_steps) AS BIGINT) AS agent_steps,
    avg(prompt_tokens) AS mean_prompt_tokens,
    avg(completion_tokens) AS mean_completion_tokens,
    CASE WHEN sum(prompt_with_cached) > 0 THEN sum(cached_with_prompt) / sum(prompt_with_cached) END AS cached_share,
    quantile_cont(completion_tokens, 0.5) AS p50_completion_tokens,
    quantile_cont(completion_tokens, 0.9) AS p90_completion_tokens,
    max(max_step_prompt_tokens) AS max_step_prompt_tokens
FROM with_outcome
GROUP BY run, outcome
ORDER BY run, CASE outcome WHEN 'Success' THEN 1 WHEN 'Failure' THEN 2 ELSE 3 END;

COMMENT ON VIEW "token_usage" IS 'What the agent''s tokens cost, per run and outcome (Success, Failure, then No reward: no reward, or no trials row at all): trials with a trajectory, their agent steps, the mean per trial of prompt and completion tokens (summed over its agent steps that have the count), the share of prompt tokens served from the cache, percentiles of the completion tokens per trial, and the largest single step''s prompt (the context''s high-water mark). Copied-context steps are left out, final_metrics is not used (the steps are what was billed). An outcome no trial has gets no row.';

CREATE OR REPLACE VIEW "tool_usage" AS
WITH per_trial AS (
    -- each trial's calls of each tool first: the join to the trials is then one row per trial and tool
    SELECT run, trial_name, function_name, count(*) AS calls
    FROM tool_calls
    WHERE NOT copied
    GROUP BY run, trial_name, function_name
)
SELECT
    p.run,
    p.function_name,
    CAST(sum(p.calls) AS BIGINT) AS calls,
    count(*) AS trials,
    count(*) FILTER (WHERE t.outcome = 'Success') AS success_trials,
    count(*) FILTER (WHERE t.outcome = 'Failure') AS failure_trials,
    sum(p.calls) / count(*) AS mean_calls_per_trial
FROM per_trial AS p
LEFT JOIN trial_rows AS t ON t.run = p.run AND t.trial_name = p.trial_name
GROUP BY p.run, p.function_name
ORDER BY p.run, calls DESC, p.function_name;

COMMENT ON VIEW "tool_usage" IS 'The tools the agent called, per run: calls, the trials that called each, how many of them succeeded or failed, and calls per calling trial. Copied-context steps (a continuation''s copy of an earlier segment) are left out. Ordered by run, calls descending, function_name.';

CREATE OR REPLACE VIEW "trial_phases" AS
WITH
    phases AS (
        SELECT
            run,
            trial_duration,
            environment_setup_duration AS environment_setup,
            agent_setup_duration AS agent_setup,
            coalesce(agent_execution_duration, agent_duration_sec) AS agent_execution,
            verifier_duration AS verifier,
            -- per trial with a trial_duration: the seconds no phase accounts for (negative: phases overlap)
            CASE WHEN trial_duration IS NOT NULL THEN
                trial_duration
                - coalesce(environment_setup_duration, 0) - coalesce(agent_setup_duration, 0)
                - coalesce(agent_execution_duration, agent_duration_sec, 0) - coalesce(verifier_duration, 0)
            END AS residual
        FROM trial_rows
    ),
    totals AS (
        -- one pass over the trials: every phase's figures side by side (10M rows are read once, not per phase)
        SELECT
            run,
            sum(trial_duration) AS total_trial_s,
            quantile_cont("environment_setup", 0.5) AS "environment_setup_median",
            avg("environment_setup") AS "environment_setup_mean",
            sum("environment_setup") AS "environment_setup_total",
            sum("environment_setup") FILTER (WHERE trial_duration IS NOT NULL) AS "environment_setup_timed",
            count("environment_setup") AS "environment_setup_trials",
            quantile_cont("agent_setup", 0.5) AS "agent_setup_median",
            avg("agent_setup") AS "agent_setup_mean",
            sum("agent_setup") AS "agent_setup_total",
            sum("agent_setup") FILTER (WHERE trial_duration IS NOT NULL) AS "agent_setup_timed",
            count("agent_setup") AS "agent_setup_trials",
            quantile_cont("agent_execution", 0.5) AS "agent_execution_median",
            avg("agent_execution") AS "agent_execution_mean",
            sum("agent_execution") AS "agent_execution_total",
            sum("agent_execution") FILTER (WHERE trial_duration IS NOT NULL) AS "agent_execution_timed",
            count("agent_execution") AS "agent_execution_trials",
            quantile_cont("verifier", 0.5) AS "verifier_median",
            avg("verifier") AS "verifier_mean",
            sum("verifier") AS "verifier_total",
            sum("verifier") FILTER (WHERE trial_duration IS NOT NULL) AS "verifier_timed",
            count("verifier") AS "verifier_trials",
            quantile_cont(residual, 0.5) AS residual_median,
            sum(residual) AS residual_total,
            count(residual) AS residual_trials
        FROM phases
        GROUP BY run
    )
SELECT run, phase, median_s, mean_s, total_s, share_of_trial, trials
FROM (
    SELECT run, 'environment_setup' AS phase, "environment_setup_median" AS median_s, "environment_setup_mean" AS mean_s,
        "environment_setup_total" AS total_s, "environment_setup_timed" / total_trial_s AS share_of_trial,
        "environment_setup_trials" AS trials, 1 AS position
    FROM totals
    WHERE "environment_setup_trials" > 0
    UNION ALL
    SELECT run, 'agent_setup' AS phase, "agent_setup_median" AS median_s, "agent_setup_mean" AS mean_s,
        "agent_setup_total" AS total_s, "agent_setup_timed" / total_trial_s AS share_of_trial,
        "agent_setup_trials" AS trials, 2 AS position
    FROM totals
    WHERE "agent_setup_trials" > 0
    UNION ALL
    SELECT run, 'agent_execution' AS phase, "agent_execution_median" AS median_s, "agent_execution_mean" AS mean_s,
        "agent_execution_total" AS total_s, "agent_execution_timed" / total_trial_s AS share_of_trial,
        "agent_execution_trials" AS trials, 3 AS position
    FROM totals
    WHERE "agent_execution_trials" > 0
    UNION ALL
    SELECT run, 'verifier' AS phase, "verifier_median" AS median_s, "verifier_mean" AS mean_s,
        "verifier_total" AS total_s, "verifier_timed" / total_trial_s AS share_of_trial,
        "verifier_trials" AS trials, 4 AS position
    FROM totals
    WHERE "verifier_trials" > 0
    UNION ALL
    SELECT
        run,
        CASE WHEN residual_total >= 0 THEN 'unattributed' ELSE 'overlap' END,
        CASE WHEN residual_total >= 0 THEN residual_median ELSE -residual_median END,
        abs(residual_total) / residual_trials,
        abs(residual_total),
        CASE WHEN residual_total >= 0 THEN residual_total / total_trial_s END,
        residual_trials,
        5
    FROM totals
    WHERE residual_trials > 0
)
ORDER BY run, position;

COMMENT ON VIEW "trial_phases" IS 'Where a trial''s time goes: per phase (environment_setup, agent_setup, agent_execution or older files'' agent_duration_sec, verifier) the median, mean and total seconds and the share of the summed trial_duration, then the time no phase covers (unattributed) or the excess of phases over the trial (overlap). No rows when the files have no phase column.';

CREATE OR REPLACE VIEW "turn_percentiles" AS
-- turn counts are whole numbers with a few hundred distinct values: the percentiles come from how many
-- trials have each value (one hash aggregate over those keys, then a few thousand rows), not from sorting
-- every trial as quantile_cont does (bench/RESULTS.md). Exact: the value at sorted position (n-1)*q,
-- interpolated between the values at its floor and ceiling as quantile_cont does (in DOUBLE, as it does).
WITH
    by_type AS (
        SELECT run, exception_type, n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL
        GROUP BY run, exception_type, n_episodes
    ),
    counts AS (
        -- each run's `All trials` group (every = 1) beside its per-type groups
        SELECT run, exception_type, 0 AS every, turns, n FROM by_type
        UNION ALL
        SELECT run, CAST(NULL AS VARCHAR), 1, turns, sum(n) FROM by_type GROUP BY run, turns
    ),
    ranked AS (
        -- upto: the group's trials with at most this many turns (the value fills sorted positions upto-n .. upto-1)
        SELECT run, exception_type, every, turns,
            sum(n) OVER (PARTITION BY run, every, exception_type ORDER BY turns
                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run, every, exception_type) - 1 AS DOUBLE) AS last
        FROM counts
    ),
    groups AS (
        SELECT
            run,
            exception_type,
            every,
            CAST(any_value(last) AS BIGINT) + 1 AS trials,
            min(turns) FILTER (WHERE upto > floor(last * CAST('0.5' AS DOUBLE))) AS "p50_lo",
            min(turns) FILTER (WHERE upto > ceil(last * CAST('0.5' AS DOUBLE))) AS "p50_hi",
            any_value(last * CAST('0.5' AS DOUBLE) - floor(last * CAST('0.5' AS DOUBLE))) AS "p50_frac",
            min(turns) FILTER (WHERE upto > floor(last * CAST('0.75' AS DOUBLE))) AS "p75_lo",
            min(turns) FILTER (WHERE upto > ceil(last * CAST('0.75' AS DOUBLE))) AS "p75_hi",
            any_value(last * CAST('0.75' AS DOUBLE) - floor(last * CAST('0.75' AS DOUBLE))) AS "p75_frac",
            min(turns) FILTER (WHERE upto > floor(last * CAST('0.9' AS DOUBLE))) AS "p90_lo",
            min(turns) FILTER (WHERE upto > ceil(last * CAST('0.9' AS DOUBLE))) AS "p90_hi",
            any_value(last * CAST('0.9' AS DOUBLE) - floor(last * CAST('0.9' AS DOUBLE))) AS "p90_frac",
            min(turns) FILTER (WHERE upto > floor(last * CAST('0.95' AS DOUBLE))) AS "p95_lo",
            min(turns) FILTER (WHERE upto > ceil(last * CAST('0.95' AS DOUBLE))) AS "p95_hi",
            any_value(last * CAST('0.95' AS DOUBLE) - floor(last * CAST('0.95' AS DOUBLE))) AS "p95_frac",
            min(turns) FILTER (WHERE upto > floor(last * CAST('0.99' AS DOUBLE))) AS "p99_lo",
            min(turns) FILTER (WHERE upto > ceil(last * CAST('0.99' AS DOUBLE))) AS "p99_hi",
            any_value(last * CAST('0.99' AS DOUBLE) - floor(last * CAST('0.99' AS DOUBLE))) AS "p99_frac",
            max(turns) AS max
        FROM ranked
        GROUP BY run, exception_type, every
    )
SELECT
    run,
    CASE WHEN every = 1 THEN 'All trials' ELSE exception_type END AS exception_type,
    trials,
    CAST("p50_lo" AS DOUBLE)
        + ("p50_hi" - "p50_lo") * "p50_frac" AS "p50",
    CAST("p75_lo" AS DOUBLE)
        + ("p75_hi" - "p75_lo") * "p75_frac" AS "p75",
    CAST("p90_lo" AS DOUBLE)
        + ("p90_hi" - "p90_lo") * "p90_frac" AS "p90",
    CAST("p95_lo" AS DOUBLE)
        + ("p95_hi" - "p95_lo") * "p95_frac" AS "p95",
    CAST("p99_lo" AS DOUBLE)
        + ("p99_hi" - "p99_lo") * "p99_frac" AS "p99",
    max
FROM groups
ORDER BY run, every DESC, exception_type;

COMMENT ON VIEW "turn_percentiles" IS 'Percentiles of agent turns (linear interpolation, as pandas) over trials with turns: first `All trials`, then each exception type by name.';

CREATE OR REPLACE VIEW "turn_stats" AS
-- turn counts are whole numbers with a few hundred distinct values: the statistics come from how many
-- trials have each value (a hash aggregate over those keys, then a few hundred rows), not from a sort of
-- every trial, which quantile_cont needs (10M trials: ~0.04 against ~0.2 CPU-s, bench/RESULTS.md). Exact:
-- the median is the mean of the values at sorted positions floor and ceil of (n-1)/2.
WITH
    counts AS (
        SELECT run, n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL
        GROUP BY run, n_episodes
    ),
    ranked AS (
        -- upto: trials with at most this many turns, a value sits at the 0-based sorted positions
        -- upto - n .. upto - 1
        SELECT run, turns, n,
            sum(n) OVER (PARTITION BY run ORDER BY turns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run) AS BIGINT) AS trials,
            -- the sum exact (DECIMAL), as avg's over whole numbers: a DOUBLE sum of large values depends on their order
            CAST(sum(CAST(turns AS DECIMAL(38, 0)) * n) OVER (PARTITION BY run) AS DOUBLE)
                / sum(n) OVER (PARTITION BY run) AS mean
        FROM counts
    ),
    t AS (
        SELECT
            run,
            any_value(trials) AS trials,
            any_value(mean) AS mean,
            -- the values at sorted positions floor and ceil of (n-1)/2: the same one for an odd count
            min(turns) FILTER (WHERE upto > floor(CAST(trials - 1 AS DOUBLE) * 0.5)) AS lo,
            min(turns) FILTER (WHERE upto > ceil(CAST(trials - 1 AS DOUBLE) * 0.5)) AS hi,
            -- sample variance (n-1), two-pass over the distinct values: sum of n * (value - mean)^2
            CASE WHEN any_value(trials) > 1
                THEN sqrt(sum(n * (turns - mean) * (turns - mean)) / (any_value(trials) - 1)) END AS std,
            min(turns) AS min,
            max(turns) AS max
        FROM ranked
        GROUP BY run
    )
SELECT
    f.run,
    coalesce(t.trials, 0) AS trials,
    t.mean,
    (t.lo + t.hi) / 2.0 AS median,
    t.std,
    t.min,
    t.max
-- every run with trials (a CSV, or Harbor's result.json files) has a row, even without a usable trial
FROM (SELECT DISTINCT run FROM run_files WHERE artifact IN ('trials', 'harbor')) AS f
LEFT JOIN t ON t.run = f.run
ORDER BY f.run;

COMMENT ON VIEW "turn_stats" IS 'Agent turns (n_episodes) over the trials that have them: count, mean, median (average of the two middle values for an even count), sample standard deviation (n-1), min and max.';

CREATE OR REPLACE VIEW "turns_by_exception" AS
-- the median from counts per distinct turn value: sql/queries/_turn_median.sql.j2
WITH
    counts AS (
        SELECT run, "exception_type", n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL
        GROUP BY run, "exception_type", n_episodes
    ),
    ranked AS (
        -- upto: the group's trials with at most this many turns (the value fills sorted positions upto-n .. upto-1)
        SELECT run, "exception_type", turns, n,
            sum(n) OVER (PARTITION BY run, "exception_type" ORDER BY turns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run, "exception_type") AS BIGINT) AS trials
        FROM counts
    ),
    groups AS (
        SELECT
            run,
            "exception_type",
            any_value(trials) AS trials,
            -- the sum exact (DECIMAL), as avg's over whole numbers: a DOUBLE sum of large values depends on their order
            CAST(sum(CAST(turns AS DECIMAL(38, 0)) * n) AS DOUBLE) / any_value(trials) AS mean_turns,
            min(turns) FILTER (WHERE upto > floor(CAST(trials - 1 AS DOUBLE) * 0.5)) AS lo,
            min(turns) FILTER (WHERE upto > ceil(CAST(trials - 1 AS DOUBLE) * 0.5)) AS hi
        FROM ranked
        GROUP BY run, "exception_type"
    )
SELECT
    run,
    exception_type,
    trials,
    mean_turns,
    (lo + hi) / 2.0 AS median_turns
FROM groups
ORDER BY run, mean_turns DESC, exception_type;

COMMENT ON VIEW "turns_by_exception" IS 'Agent turns per exception type over trials with turns (`No exception` for a clean trial): trials, mean and median turns, highest mean first.';

CREATE OR REPLACE VIEW "turns_by_outcome" AS
-- the median from counts per distinct turn value: sql/queries/_turn_median.sql.j2
WITH
    counts AS (
        SELECT run, "outcome", n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL AND "outcome" IS NOT NULL
        GROUP BY run, "outcome", n_episodes
    ),
    ranked AS (
        -- upto: the group's trials with at most this many turns (the value fills sorted positions upto-n .. upto-1)
        SELECT run, "outcome", turns, n,
            sum(n) OVER (PARTITION BY run, "outcome" ORDER BY turns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run, "outcome") AS BIGINT) AS trials
        FROM counts
    ),
    groups AS (
        SELECT
            run,
            "outcome",
            any_value(trials) AS trials,
            -- the sum exact (DECIMAL), as avg's over whole numbers: a DOUBLE sum of large values depends on their order
            CAST(sum(CAST(turns AS DECIMAL(38, 0)) * n) AS DOUBLE) / any_value(trials) AS mean_turns,
            min(turns) FILTER (WHERE upto > floor(CAST(trials - 1 AS DOUBLE) * 0.5)) AS lo,
            min(turns) FILTER (WHERE upto > ceil(CAST(trials - 1 AS DOUBLE) * 0.5)) AS hi
        FROM ranked
        GROUP BY run, "outcome"
    )
SELECT
    run,
    outcome,
    trials,
    mean_turns,
    (lo + hi) / 2.0 AS median_turns
FROM groups
ORDER BY run, outcome = 'Failure', outcome;

COMMENT ON VIEW "turns_by_outcome" IS 'Agent turns by outcome over trials with both turns and a reward: Success (reward > 0) first, then Failure (reward = 0), a negative reward is neither.';

CREATE OR REPLACE VIEW "vllm_summary" AS
WITH per_log AS (
    SELECT
        run,
        log_file,
        count(*) AS seconds,
        count(*) AS stat_lines,
        avg(n_engines_reporting) AS mean_engines_reporting,
        avg(avg_running_requests_per_engine) AS mean_running_per_engine,
        max(total_running_requests) AS max_total_running,
        avg(total_waiting_requests) AS mean_total_waiting,
        max(total_waiting_requests) AS max_total_waiting,
        avg(avg_generation_throughput_per_engine) AS mean_generation_tps_per_engine,
        max(total_generation_throughput_tokens_per_sec) AS max_total_generation_tps,
        avg(avg_gpu_kv_cache_usage_pct) AS mean_kv_cache_pct,
        avg(avg_prefix_cache_hit_rate_pct) AS mean_prefix_cache_hit_pct
    FROM vllm_seconds
    GROUP BY run, log_file
)
SELECT
    * EXCLUDE (stat_lines),
    CASE
        WHEN mean_total_waiting = 0 AND mean_running_per_engine < 5 THEN 'underutilized'
        WHEN mean_total_waiting > 0 THEN 'well-utilized'
        WHEN mean_generation_tps_per_engine < 300 THEN 'low throughput'
        ELSE 'moderate'
    END AS utilization,
    stat_lines
FROM per_log
ORDER BY run, log_file;

COMMENT ON VIEW "vllm_summary" IS 'vLLM engine stats per run and log: seconds with a stat line, means per engine, max totals, KV-cache and prefix-cache percents (0-100), and a utilisation verdict (underutilized: nothing waits and < 5 running per engine, well-utilized: requests wait, low throughput: < 300 tok/s per engine, else moderate). Version 2 adds stat_lines after the v1 columns: the same count as `seconds`, under an honest name (the parser writes one row per second with a stat line, and engines print one every 4-9 s, so it is not the log''s duration).';

CREATE OR REPLACE VIEW "config_src" AS
SELECT
    run,
    CAST(generate_subscripts(doc.keys, 1) AS INTEGER) AS ordinal,
    unnest(doc.keys) AS key,
    unnest(doc.texts) AS value,
    unnest(doc.jsons) AS value_json
FROM (
    SELECT run, from_json(doc, '{"keys": ["VARCHAR"], "texts": ["VARCHAR"], "jsons": ["VARCHAR"]}') AS doc
    FROM (
        VALUES ('tiny', '{"keys": ["trainer.strategy", "trainer.max_steps", "trainer.train_batch_size", "trainer.ckpt_interval", "trainer.hf_save_interval", "trainer.fully_async.max_staleness_steps", "trainer.policy.optimizer_config.lr", "generator.num_inference_engines", "generator.n_samples_per_prompt", "terminal_bench.harbor.exclude_exceptions", "terminal_bench.harbor.passthrough_exceptions", "terminal_bench.harbor.mask_exceptions", "terminal_bench.harbor.zero_exceptions", "terminal_bench.harbor.default_error_treatment", "terminal_bench.harbor.orchestrator.n_concurrent_trials"], "texts": ["fsdp2", "5", "3", "1", "2", "4", "1e-06", "2", "4", "[\"AgentTimeoutError\", \"ContextLengthExceededError\"]", "[\"AgentTimeoutError\"]", "[\"DaytonaError\", \"ContextLengthExceededError\"]", "[]", "zero", "8"], "jsons": ["\"fsdp2\"", "5", "3", "1", "2", "4", "1e-06", "2", "4", "[\"AgentTimeoutError\", \"ContextLengthExceededError\"]", "[\"AgentTimeoutError\"]", "[\"DaytonaError\", \"ContextLengthExceededError\"]", "[]", "\"zero\"", "8"]}')
    ) AS t(run, doc)
) AS t;

COMMENT ON VIEW "config_src" IS 'Each run''s rl_config.yaml flattened to one row per leaf: run, ordinal (document order), key (dotted path), value (text), value_json (the YAML value as JSON, lists stay whole).';

CREATE OR REPLACE VIEW "harbor_trials_src" AS
-- no run reads Harbor trials: the same columns and no rows (binding the reader below cost ~30 ms of
-- every trial query's start on a run with a trials CSV)
SELECT
    CAST(NULL AS VARCHAR) AS run,
    CAST(NULL AS VARCHAR) AS source_file,
    CAST(NULL AS BIGINT) AS row_no,
    CAST(NULL AS VARCHAR) AS "task_name",
    CAST(NULL AS VARCHAR) AS "trial_name",
    CAST(NULL AS DOUBLE) AS "n_episodes",
    CAST(NULL AS DOUBLE) AS "n_input_tokens",
    CAST(NULL AS DOUBLE) AS "n_output_tokens",
    CAST(NULL AS VARCHAR) AS "exception_type",
    CAST(NULL AS DOUBLE) AS "reward",
    CAST(NULL AS DOUBLE) AS "agent_duration_sec",
    CAST(NULL AS DOUBLE) AS "trial_duration",
    CAST(NULL AS DOUBLE) AS "environment_setup_duration",
    CAST(NULL AS DOUBLE) AS "agent_setup_duration",
    CAST(NULL AS DOUBLE) AS "agent_execution_duration",
    CAST(NULL AS DOUBLE) AS "verifier_duration",
    CAST(NULL AS VARCHAR) AS "exception_message",
    CAST(NULL AS VARCHAR) AS "started_at",
    CAST(NULL AS VARCHAR) AS "finished_at",
    CAST(NULL AS VARCHAR) AS "problem",
    CAST(NULL AS VARCHAR) AS "bad_values",
    CAST(NULL AS VARCHAR) AS "nonfinite"
WHERE false;

COMMENT ON VIEW "harbor_trials_src" IS 'Harbor''s own trial results read in place, for runs without a `*_trial_results.csv`: one row per `trace_jobs/<trial>/result.json`, mapped to the CSV''s columns as the log parser maps them (n_episodes from agent_result.metadata, reward from verifier_result.rewards.reward, each duration = finished_at - started_at of its timing block), plus exception_message, started_at and finished_at. row_no follows the trial folder names, sorted. A file that is no trial (not a regular file, not UTF-8, not a JSON object, ...) has a row with `problem` saying why and every trial column NULL: read trials with `WHERE problem IS NULL` (trial_rows does). `bad_values` lists (joined with `, `) the numbers of the wrong type read as NULL (`verifier_result.rewards.reward: true is not a number`), `nonfinite` (joined with `, `) the fields holding NaN or Infinity, read as NULL, both NULL when there are none.';

CREATE OR REPLACE VIEW "metrics_src" AS
SELECT
    CASE WHEN c.rlsql_file_name = ['<ROOT>/fixtures/runs/tiny/20260105_120000_metrics_table.csv'][c.rlsql_file_index + 1]
        THEN ['tiny'][c.rlsql_file_index + 1]
        ELSE error('rlsql-data: ' || c.rlsql_file_name || ': DuckDB read this file, which is not one of the files listed for the query') END AS run,
    ['<ROOT>/fixtures/runs/tiny/20260105_120000_metrics_table.csv'][c.rlsql_file_index + 1] AS source_file,
    c.row_no,
    c."log_file",
    CASE WHEN c."trainer/global_step" = trunc(c."trainer/global_step") AND abs(c."trainer/global_step") <= 9007199254740992 THEN CAST(c."trainer/global_step" AS BIGINT) END AS "trainer/global_step",
    CASE WHEN c."global_step" = trunc(c."global_step") AND abs(c."global_step") <= 9007199254740992 THEN CAST(c."global_step" AS BIGINT) END AS "global_step",
    CASE WHEN isfinite(c."reward/avg_raw_reward") THEN c."reward/avg_raw_reward" END AS "reward/avg_raw_reward",
    CASE WHEN isfinite(c."timing/step") THEN c."timing/step" END AS "timing/step",
    CASE WHEN isfinite(c."async/staleness_mean") THEN c."async/staleness_mean" END AS "async/staleness_mean",
    CASE WHEN isfinite(c."async/staleness_max") THEN c."async/staleness_max" END AS "async/staleness_max",
    CASE WHEN isfinite(c."async/discard_rate") THEN c."async/discard_rate" END AS "async/discard_rate",
    CASE WHEN c."async/discarded_count" = trunc(c."async/discarded_count") AND abs(c."async/discarded_count") <= 9007199254740992 THEN CAST(c."async/discarded_count" AS BIGINT) END AS "async/discarded_count",
    CASE WHEN isfinite(c."reward/avg_pass_at_4") THEN c."reward/avg_pass_at_4" END AS "reward/avg_pass_at_4",
    CASE WHEN isfinite(c."timing/wait_for_generation_buffer") THEN c."timing/wait_for_generation_buffer" END AS "timing/wait_for_generation_buffer",
    CASE WHEN isfinite(c."timing/policy_train") THEN c."timing/policy_train" END AS "timing/policy_train",
    CASE WHEN isfinite(c."timing/run_training") THEN c."timing/run_training" END AS "timing/run_training",
    CASE WHEN isfinite(c."timing/sync_weights") THEN c."timing/sync_weights" END AS "timing/sync_weights",
    CASE WHEN isfinite(c."timing/save_checkpoints") THEN c."timing/save_checkpoints" END AS "timing/save_checkpoints",
    CASE WHEN isfinite(c."timing/mystery_span") THEN c."timing/mystery_span" END AS "timing/mystery_span"
FROM (
    SELECT row_number() OVER () AS row_no, *, filename AS rlsql_file_name, CAST(file_index AS BIGINT) AS rlsql_file_index
    FROM read_csv(['<ROOT>/fixtures/runs/tiny/20260105_120000_metrics_table.csv'], header = true, auto_detect = false, delim = ',', quote = '"', escape = '"',
    ignore_errors = true, store_rejects = true, buffer_size = 16777216, max_line_size = 2097152,
    columns = {'log_file': 'VARCHAR', 'async/staleness_mean': 'DOUBLE', 'async/staleness_max': 'DOUBLE', 'async/discard_rate': 'DOUBLE', 'async/discarded_count': 'DOUBLE', 'reward/avg_raw_reward': 'DOUBLE', 'reward/avg_pass_at_4': 'DOUBLE', 'timing/wait_for_generation_buffer': 'DOUBLE', 'timing/policy_train': 'DOUBLE', 'timing/run_training': 'DOUBLE', 'timing/sync_weights': 'DOUBLE', 'timing/step': 'DOUBLE', 'trainer/global_step': 'DOUBLE', 'timing/save_checkpoints': 'DOUBLE', 'timing/mystery_span': 'DOUBLE', 'global_step': 'DOUBLE'})
) AS c;

COMMENT ON VIEW "metrics_src" IS 'Raw rows of each run''s trainer metrics CSV (`*_metrics_table.csv` / `metrics.csv`), read in place: run, source_file, row_no (CSV order), then every column of the file (metrics as DOUBLE). A run without the CSV gives the same columns from its raw training logs (console metric blocks or WANDB_MIRROR lines, batch_errors/* from the batch lines, source_file = the log).';

CREATE OR REPLACE VIEW "run_files" AS
SELECT * FROM (
    VALUES ('tiny', 'metrics', '<ROOT>/fixtures/runs/tiny/20260105_120000_metrics_table.csv', '20260105_120000')
    , ('tiny', 'trials', '<ROOT>/fixtures/runs/tiny/20260105_120000_trial_results.csv', '20260105_120000')
    , ('tiny', 'vllm', '<ROOT>/fixtures/runs/tiny/20260105_120000_vllm_metrics_table.csv', '20260105_120000')
    , ('tiny', 'config', '<ROOT>/fixtures/runs/tiny/rl_config.yaml', NULL)
) AS t(run, artifact, path, prefix);

COMMENT ON VIEW "run_files" IS 'The artifact files rlsql reads for each run (newest parse only): run, artifact (metrics, trials, vllm, config), absolute path, the file name''s timestamp prefix.';

CREATE OR REPLACE VIEW "runs" AS
SELECT * FROM (
    VALUES ('tiny', '<ROOT>/fixtures/runs/tiny', DATE '2026-01-05')
) AS t(run, run_path, vllm_base_date);

COMMENT ON VIEW "runs" IS 'One row per run folder given to rlsql: its id (the folder name), its absolute path and the date its vLLM `MM-DD` stamps are read against.';

CREATE OR REPLACE VIEW "tool_calls_src" AS
-- no run has a trajectory: the same columns and no rows
SELECT
    CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS trial_name, CAST(NULL AS INTEGER) AS segment,
    CAST(NULL AS BIGINT) AS step_index, CAST(NULL AS BIGINT) AS step_id,
    CAST(NULL AS BIGINT) AS turn, CAST(NULL AS BIGINT) AS call_index, CAST(NULL AS VARCHAR) AS tool_call_id,
    CAST(NULL AS VARCHAR) AS function_name, CAST(NULL AS VARCHAR) AS arguments,
    CAST(NULL AS BIGINT) AS observation_chars, CAST(NULL AS BOOLEAN) AS copied
WHERE false;

COMMENT ON VIEW "tool_calls_src" IS 'Every tool call of every trial''s agent trajectory (ATIF), read in place: one row per element of a step''s `tool_calls` in `trace_jobs/<trial>/agent/trajectory.json` and `trajectory.cont-N.json`, with the step''s segment, step_id, position in its file (step_index), turn and copied flag, the call''s position (call_index), tool_call_id, function_name, its arguments as canonical JSON text (keys sorted at every depth, no spaces, non-ASCII kept: Python''s json.dumps(a, sort_keys=True, separators=(",", ":"), ensure_ascii=False)) and the characters of the step''s observation results whose source_call_id is the call''s id. Damaged files have no rows here (trajectory_steps_src names them).';

CREATE OR REPLACE VIEW "trajectory_steps_src" AS
-- no run has a trajectory: the same columns and no rows
SELECT
    CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS trial_name, CAST(NULL AS INTEGER) AS segment,
    CAST(NULL AS VARCHAR) AS source_file, CAST(NULL AS VARCHAR) AS problem, CAST(NULL AS BIGINT) AS step_index,
    CAST(NULL AS BIGINT) AS step_id, CAST(NULL AS BIGINT) AS turn, CAST(NULL AS VARCHAR) AS source,
    CAST(NULL AS VARCHAR) AS "timestamp", CAST(NULL AS TIMESTAMP) AS ts, CAST(NULL AS VARCHAR) AS model_name,
    CAST(NULL AS BIGINT) AS message_chars, CAST(NULL AS BIGINT) AS reasoning_chars, CAST(NULL AS BIGINT) AS tool_calls,
    CAST(NULL AS BIGINT) AS prompt_tokens, CAST(NULL AS BIGINT) AS completion_tokens,
    CAST(NULL AS BIGINT) AS cached_tokens, CAST(NULL AS DOUBLE) AS cost_usd, CAST(NULL AS BOOLEAN) AS copied
WHERE false;

COMMENT ON VIEW "trajectory_steps_src" IS 'Every trial''s agent trajectory (ATIF) read in place: one row per step of every `trace_jobs/<trial>/agent/trajectory.json` (segment 0) and `trajectory.cont-N.json` (segment N), with the figures the `trajectory_steps` view gives (turn, source, ts, model_name, characters, tool calls, tokens, cost, copied), its position in the file (step_index) and the timestamp as written, plus one row per damaged file (cut short, not JSON, not an object, no `steps` list, a step without an integer step_id, not a regular file, ...) with `problem` saying why and every step column NULL: read steps with `WHERE problem IS NULL` (trajectory_steps does). Token counts that are not whole numbers from 0 to 2**53 read as NULL.';

CREATE OR REPLACE VIEW "trajectory_texts_src" AS
SELECT
    CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS trial_name, CAST(NULL AS INTEGER) AS segment,
    CAST(NULL AS VARCHAR) AS source_file, CAST(NULL AS VARCHAR) AS problem, CAST(NULL AS BIGINT) AS step_index,
    CAST(NULL AS BIGINT) AS step_id, CAST(NULL AS VARCHAR) AS source, CAST(NULL AS VARCHAR) AS "timestamp",
    CAST(NULL AS VARCHAR) AS message, CAST(NULL AS VARCHAR) AS reasoning,
    CAST(NULL AS VARCHAR) AS calls, CAST(NULL AS VARCHAR) AS observations
WHERE false;

COMMENT ON VIEW "trajectory_texts_src" IS 'The words of every trial''s agent trajectory, for `rlsql trial` (rendered there over one trial''s files): one row per step of `trace_jobs/<trial>/agent/trajectory.json` and `trajectory.cont-N.json` with its segment, step_id, place in the file (step_index), source, the timestamp as written, the message and the reasoning as text (a content part that is no text shows as `[image: PATH]`), its tool calls (a JSON array of tool_call_id, function_name, arguments) and observation results (a JSON array of source_call_id, content as text), plus one row per damaged file with `problem` saying why.';

CREATE OR REPLACE VIEW "trials_src" AS
SELECT
    CASE WHEN c.rlsql_file_name = ['<ROOT>/fixtures/runs/tiny/20260105_120000_trial_results.csv'][c.rlsql_file_index + 1]
        THEN ['tiny'][c.rlsql_file_index + 1]
        ELSE error('rlsql-data: ' || c.rlsql_file_name || ': DuckDB read this file, which is not one of the files listed for the query') END AS run,
    ['<ROOT>/fixtures/runs/tiny/20260105_120000_trial_results.csv'][c.rlsql_file_index + 1] AS source_file,
    c.row_no,
    c."task_name",
    c."trial_name",
    CASE WHEN c."n_episodes" = trunc(c."n_episodes") AND abs(c."n_episodes") <= 9007199254740992 THEN CAST(c."n_episodes" AS BIGINT) END AS "n_episodes",
    CASE WHEN c."n_input_tokens" = trunc(c."n_input_tokens") AND abs(c."n_input_tokens") <= 9007199254740992 THEN CAST(c."n_input_tokens" AS BIGINT) END AS "n_input_tokens",
    CASE WHEN c."n_output_tokens" = trunc(c."n_output_tokens") AND abs(c."n_output_tokens") <= 9007199254740992 THEN CAST(c."n_output_tokens" AS BIGINT) END AS "n_output_tokens",
    c."exception_type",
    CASE WHEN isfinite(c."reward") THEN c."reward" END AS "reward",
    CASE WHEN isfinite(c."agent_duration_sec") THEN c."agent_duration_sec" END AS "agent_duration_sec",
    CAST(NULL AS DOUBLE) AS "trial_duration",
    CAST(NULL AS DOUBLE) AS "environment_setup_duration",
    CAST(NULL AS DOUBLE) AS "agent_setup_duration",
    CAST(NULL AS DOUBLE) AS "agent_execution_duration",
    CAST(NULL AS DOUBLE) AS "verifier_duration"
FROM (
    SELECT row_number() OVER () AS row_no, *, filename AS rlsql_file_name, CAST(file_index AS BIGINT) AS rlsql_file_index
    FROM read_csv(['<ROOT>/fixtures/runs/tiny/20260105_120000_trial_results.csv'], header = true, auto_detect = false, delim = ',', quote = '"', escape = '"',
    ignore_errors = true, store_rejects = true, buffer_size = 16777216, max_line_size = 2097152,
    columns = {'task_name': 'VARCHAR', 'trial_name': 'VARCHAR', 'n_episodes': 'DOUBLE', 'n_input_tokens': 'DOUBLE', 'n_output_tokens': 'DOUBLE', 'exception_type': 'VARCHAR', 'reward': 'DOUBLE', 'agent_duration_sec': 'DOUBLE'})
) AS c;

COMMENT ON VIEW "trials_src" IS 'Raw rows of each run''s `*_trial_results.csv` (one per Harbor trial), read in place: run, source_file, row_no (CSV order), then the file''s columns by name.';

CREATE OR REPLACE VIEW "vllm_src" AS
SELECT
    CASE WHEN c.rlsql_file_name = ['<ROOT>/fixtures/runs/tiny/20260105_120000_vllm_metrics_table.csv'][c.rlsql_file_index + 1]
        THEN ['tiny'][c.rlsql_file_index + 1]
        ELSE error('rlsql-data: ' || c.rlsql_file_name || ': DuckDB read this file, which is not one of the files listed for the query') END AS run,
    ['<ROOT>/fixtures/runs/tiny/20260105_120000_vllm_metrics_table.csv'][c.rlsql_file_index + 1] AS source_file,
    c.row_no,
    c."log_file",
    c."datetime_str",
    CASE WHEN c."n_engines_reporting" = trunc(c."n_engines_reporting") AND abs(c."n_engines_reporting") <= 9007199254740992 THEN CAST(c."n_engines_reporting" AS BIGINT) END AS "n_engines_reporting",
    CASE WHEN c."unique_ips" = trunc(c."unique_ips") AND abs(c."unique_ips") <= 9007199254740992 THEN CAST(c."unique_ips" AS BIGINT) END AS "unique_ips",
    CASE WHEN isfinite(c."total_prompt_throughput_tokens_per_sec") THEN c."total_prompt_throughput_tokens_per_sec" END AS "total_prompt_throughput_tokens_per_sec",
    CASE WHEN isfinite(c."total_generation_throughput_tokens_per_sec") THEN c."total_generation_throughput_tokens_per_sec" END AS "total_generation_throughput_tokens_per_sec",
    CASE WHEN c."total_running_requests" = trunc(c."total_running_requests") AND abs(c."total_running_requests") <= 9007199254740992 THEN CAST(c."total_running_requests" AS BIGINT) END AS "total_running_requests",
    CASE WHEN c."total_waiting_requests" = trunc(c."total_waiting_requests") AND abs(c."total_waiting_requests") <= 9007199254740992 THEN CAST(c."total_waiting_requests" AS BIGINT) END AS "total_waiting_requests",
    CASE WHEN isfinite(c."avg_prompt_throughput_per_engine") THEN c."avg_prompt_throughput_per_engine" END AS "avg_prompt_throughput_per_engine",
    CASE WHEN isfinite(c."avg_generation_throughput_per_engine") THEN c."avg_generation_throughput_per_engine" END AS "avg_generation_throughput_per_engine",
    CASE WHEN isfinite(c."avg_running_requests_per_engine") THEN c."avg_running_requests_per_engine" END AS "avg_running_requests_per_engine",
    CASE WHEN isfinite(c."avg_waiting_requests_per_engine") THEN c."avg_waiting_requests_per_engine" END AS "avg_waiting_requests_per_engine",
    CASE WHEN isfinite(c."avg_gpu_kv_cache_usage_pct") THEN c."avg_gpu_kv_cache_usage_pct" END AS "avg_gpu_kv_cache_usage_pct",
    CASE WHEN isfinite(c."avg_prefix_cache_hit_rate_pct") THEN c."avg_prefix_cache_hit_rate_pct" END AS "avg_prefix_cache_hit_rate_pct",
    CASE WHEN c."min_running_requests" = trunc(c."min_running_requests") AND abs(c."min_running_requests") <= 9007199254740992 THEN CAST(c."min_running_requests" AS BIGINT) END AS "min_running_requests",
    CASE WHEN c."max_running_requests" = trunc(c."max_running_requests") AND abs(c."max_running_requests") <= 9007199254740992 THEN CAST(c."max_running_requests" AS BIGINT) END AS "max_running_requests",
    CASE WHEN isfinite(c."min_generation_throughput") THEN c."min_generation_throughput" END AS "min_generation_throughput",
    CASE WHEN isfinite(c."max_generation_throughput") THEN c."max_generation_throughput" END AS "max_generation_throughput"
FROM (
    SELECT row_number() OVER () AS row_no, *, filename AS rlsql_file_name, CAST(file_index AS BIGINT) AS rlsql_file_index
    FROM read_csv(['<ROOT>/fixtures/runs/tiny/20260105_120000_vllm_metrics_table.csv'], header = true, auto_detect = false, delim = ',', quote = '"', escape = '"',
    ignore_errors = true, store_rejects = true, buffer_size = 16777216, max_line_size = 2097152,
    columns = {'log_file': 'VARCHAR', 'datetime_str': 'VARCHAR', 'n_engines_reporting': 'DOUBLE', 'unique_ips': 'DOUBLE', 'total_prompt_throughput_tokens_per_sec': 'DOUBLE', 'total_generation_throughput_tokens_per_sec': 'DOUBLE', 'total_running_requests': 'DOUBLE', 'total_waiting_requests': 'DOUBLE', 'avg_prompt_throughput_per_engine': 'DOUBLE', 'avg_generation_throughput_per_engine': 'DOUBLE', 'avg_running_requests_per_engine': 'DOUBLE', 'avg_waiting_requests_per_engine': 'DOUBLE', 'avg_gpu_kv_cache_usage_pct': 'DOUBLE', 'avg_prefix_cache_hit_rate_pct': 'DOUBLE', 'min_running_requests': 'DOUBLE', 'max_running_requests': 'DOUBLE', 'min_generation_throughput': 'DOUBLE', 'max_generation_throughput': 'DOUBLE'})
) AS c;

COMMENT ON VIEW "vllm_src" IS 'Raw rows of each run''s vLLM engine stats CSV (`*_vllm_metrics_table.csv` / `vllm_metrics.csv`), one per (log_file, second), read in place. A run without the CSV gives the same rows from the vLLM stat lines of its raw training logs (source_file = the log).';

COMMENT ON COLUMN "async_health"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "async_health"."mean_staleness" IS 'mean of async/staleness_mean over every metric row';

COMMENT ON COLUMN "async_health"."max_staleness" IS 'max of async/staleness_max over every metric row';

COMMENT ON COLUMN "async_health"."mean_discard_rate" IS 'mean of async/discard_rate (0-1)';

COMMENT ON COLUMN "async_health"."steps_with_discards" IS 'deduplicated steps with async/discarded_count > 0 (or discard_rate > 0 without a count)';

COMMENT ON COLUMN "best_checkpoint"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "best_checkpoint"."step" IS 'the selected checkpoint step, NULL when no step is eligible';

COMMENT ON COLUMN "best_checkpoint"."ema" IS 'the EMA of the reward at that step';

COMMENT ON COLUMN "best_checkpoint"."reward" IS 'reward/avg_raw_reward at that step';

COMMENT ON COLUMN "best_checkpoint"."save_every" IS 'the checkpoint interval used';

COMMENT ON COLUMN "best_checkpoint"."eligible_steps" IS 'how many steps were eligible';

COMMENT ON COLUMN "best_checkpoint"."reason" IS 'why the step was chosen, or why none could be';

COMMENT ON COLUMN "checkpoint_ema"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "checkpoint_ema"."step" IS 'a deduplicated training step (first-seen row)';

COMMENT ON COLUMN "checkpoint_ema"."reward" IS 'reward/avg_raw_reward of that step';

COMMENT ON COLUMN "checkpoint_ema"."ema" IS 'the EMA of the reward (span parameter, alpha = 2/(span+1))';

COMMENT ON COLUMN "checkpoint_ema"."rolling_mean" IS 'mean reward of the last `span` deduplicated steps';

COMMENT ON COLUMN "checkpoint_ema"."save_every" IS 'the run''s checkpoint interval (checkpoint_settings)';

COMMENT ON COLUMN "checkpoint_ema"."eligible" IS 'true when the step has an EMA, is a multiple of save_every and at least 2*save_every';

COMMENT ON COLUMN "checkpoint_ema"."is_best" IS 'true for the eligible step with the highest EMA (ties to the earliest)';

COMMENT ON COLUMN "checkpoint_settings"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "checkpoint_settings"."save_every" IS 'checkpoint interval in steps: the parameter, else trainer.hf_save_interval, else 20';

COMMENT ON COLUMN "compare_runs"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "compare_runs"."steps" IS 'deduplicated training steps';

COMMENT ON COLUMN "compare_runs"."trials" IS 'trials in the run';

COMMENT ON COLUMN "compare_runs"."success_rate" IS 'share (0-1) of trials with a reward whose reward > 0';

COMMENT ON COLUMN "compare_runs"."mean_reward" IS 'mean reward over trials with a reward';

COMMENT ON COLUMN "compare_runs"."final_ema" IS 'the EMA of the last deduplicated step';

COMMENT ON COLUMN "compare_runs"."best_ema" IS 'the highest EMA over the steps';

COMMENT ON COLUMN "compare_runs"."best_ema_step" IS 'the step of best_ema (ties to the earliest)';

COMMENT ON COLUMN "compare_runs"."mean_step_time_s" IS 'mean of timing/step over deduplicated steps, seconds';

COMMENT ON COLUMN "compare_runs"."timeout_rate" IS 'share (0-1) of trials that ended in AgentTimeoutError';

COMMENT ON COLUMN "compare_runs"."context_length_rate" IS 'share (0-1) of trials that ended in ContextLengthExceededError';

COMMENT ON COLUMN "compare_runs"."differing_config" IS 'config keys whose values differ between the runs given, key=value sorted by key, joined with a semicolon and a space';

COMMENT ON COLUMN "config"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "config"."ordinal" IS 'the key''s position in the YAML document (1 = first)';

COMMENT ON COLUMN "config"."key" IS 'the dotted path of the key (e.g. trainer.hf_save_interval)';

COMMENT ON COLUMN "config"."value" IS 'the value as text (a list as JSON text, `null` for a YAML null)';

COMMENT ON COLUMN "config"."value_json" IS 'the value as JSON (lists stay whole)';

COMMENT ON COLUMN "config_diff"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "config_diff"."key" IS 'a dotted config key whose value differs between the runs';

COMMENT ON COLUMN "config_diff"."value" IS 'this run''s value as text, `null` for a YAML null, NULL where the run lacks the key';

COMMENT ON COLUMN "exception_distribution"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "exception_distribution"."exception_type" IS 'the exception that ended the trial (Python class name), `No exception` when none';

COMMENT ON COLUMN "exception_distribution"."trials" IS 'trials that ended so';

COMMENT ON COLUMN "exception_distribution"."pct" IS 'percent (0-100) of the run''s trials';

COMMENT ON COLUMN "exception_distribution"."treatment" IS 'the route the run''s config gives the type: none, passthrough, mask or zero';

COMMENT ON COLUMN "exception_routing"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "exception_routing"."passthrough_exceptions" IS 'exception names trained as if nothing failed (config, else the trainer''s default: none)';

COMMENT ON COLUMN "exception_routing"."mask_exceptions" IS 'exception names scored 0 and left out of the baseline (config, else the trainer''s default list)';

COMMENT ON COLUMN "exception_routing"."zero_exceptions" IS 'exception names scored 0 and counted in the baseline (config, else the trainer''s default list)';

COMMENT ON COLUMN "exception_routing"."default_error_treatment" IS 'the treatment of any other exception: zero, mask or passthrough (default zero)';

COMMENT ON COLUMN "exception_routing"."from_config" IS 'true when the run has an rl_config.yaml with values to search, false when every key is the default';

COMMENT ON COLUMN "exception_treatment"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "exception_treatment"."treatment" IS 'the effective treatment: none, passthrough, mask or zero';

COMMENT ON COLUMN "exception_treatment"."trials" IS 'trials that got it';

COMMENT ON COLUMN "exception_treatment"."pct" IS 'percent (0-100) of the run''s trials';

COMMENT ON COLUMN "exception_treatment"."exception_types" IS 'the distinct exception types routed so, sorted, joined with `, `';

COMMENT ON COLUMN "log_summary"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "log_summary"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "log_summary"."rows" IS 'metric rows in the log';

COMMENT ON COLUMN "log_summary"."first_step" IS 'the log''s lowest step';

COMMENT ON COLUMN "log_summary"."last_step" IS 'the log''s highest step';

COMMENT ON COLUMN "log_summary"."mean_reward" IS 'mean of reward/avg_raw_reward over the log''s rows';

COMMENT ON COLUMN "log_summary"."mean_pass_at_k" IS 'mean of the run''s reward/avg_pass_at_<k> over the log''s rows';

COMMENT ON COLUMN "log_summary"."k" IS 'the k of mean_pass_at_k';

COMMENT ON COLUMN "log_summary"."mean_step_s" IS 'mean of timing/step over the log''s rows, seconds';

COMMENT ON COLUMN "log_summary"."mean_generation_wait_s" IS 'mean of timing/wait_for_generation_buffer over the log''s rows, seconds';

COMMENT ON COLUMN "log_summary"."mean_tokens" IS 'mean of generate/avg_num_tokens over the log''s rows';

COMMENT ON COLUMN "log_summary"."mean_staleness" IS 'mean of async/staleness_mean over the log''s rows';

COMMENT ON COLUMN "looping_trials"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "looping_trials"."trial_name" IS 'the trial folder''s name';

COMMENT ON COLUMN "looping_trials"."outcome" IS 'Success (reward > 0), Failure (reward = 0) or No reward (no reward, or no trials row)';

COMMENT ON COLUMN "looping_trials"."exception_type" IS 'the exception that ended the trial, `No exception` without one, NULL without a trials row';

COMMENT ON COLUMN "looping_trials"."n_episodes" IS 'the trial''s turns as the trials view gives them (NULL without a trials row)';

COMMENT ON COLUMN "looping_trials"."function_name" IS 'the tool called';

COMMENT ON COLUMN "looping_trials"."arguments" IS 'its arguments as canonical JSON text (keys sorted at every depth)';

COMMENT ON COLUMN "looping_trials"."repeats" IS 'how many times the trial''s agent made this call';

COMMENT ON COLUMN "looping_trials"."first_turn" IS 'the turn of the first of them (by segment, step_id, call_index)';

COMMENT ON COLUMN "looping_trials"."last_turn" IS 'the turn of the last of them';

COMMENT ON COLUMN "metric_rows"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "metric_rows"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "metric_rows"."step" IS 'the training step (trainer/global_step, else global_step)';

COMMENT ON COLUMN "metric_rows"."row_no" IS 'the row''s position in the run''s metrics CSV (1 = first data row)';

COMMENT ON COLUMN "metric_rows"."source_file" IS 'the metrics CSV the row was read from (absolute path)';

COMMENT ON COLUMN "metric_rows"."trainer/global_step" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."global_step" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."reward/avg_raw_reward" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/step" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."async/staleness_mean" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."async/staleness_max" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."async/discard_rate" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."async/discarded_count" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."reward/avg_pass_at_4" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/wait_for_generation_buffer" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/policy_train" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/run_training" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/sync_weights" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/save_checkpoints" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_rows"."timing/mystery_span" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "metric_stats"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "metric_stats"."family" IS 'the metric''s family: its name before the first `/` (async, generate, ...), `other` without one';

COMMENT ON COLUMN "metric_stats"."metric" IS 'the metric column''s full name';

COMMENT ON COLUMN "metric_stats"."mean" IS 'mean of its recorded values over every metric row';

COMMENT ON COLUMN "metric_stats"."std" IS 'sample standard deviation (n-1), NULL below two values';

COMMENT ON COLUMN "metric_stats"."min" IS 'smallest recorded value';

COMMENT ON COLUMN "metric_stats"."max" IS 'largest recorded value';

COMMENT ON COLUMN "metric_stats"."count" IS 'metric rows with a value (a re-run step counts once per log)';

COMMENT ON COLUMN "metrics_long"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "metrics_long"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "metrics_long"."step" IS 'the training step (trainer/global_step, else global_step)';

COMMENT ON COLUMN "metrics_long"."row_no" IS 'the row''s position in the run''s metrics CSV (1 = first data row)';

COMMENT ON COLUMN "metrics_long"."metric" IS 'the metric column''s name (e.g. reward/avg_raw_reward)';

COMMENT ON COLUMN "metrics_long"."value" IS 'its value in that row (rows without one are left out)';

COMMENT ON COLUMN "progression_rows"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "progression_rows"."step" IS 'the training step';

COMMENT ON COLUMN "progression_rows"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "progression_rows"."row_no" IS 'the row''s position in the run''s metrics CSV (1 = first data row)';

COMMENT ON COLUMN "progression_rows"."used" IS 'true for the first-seen row of its step (the one the curve and the checkpoint selector use)';

COMMENT ON COLUMN "progression_rows"."rerun" IS 'true when the step was logged more than once';

COMMENT ON COLUMN "progression_rows"."reward" IS 'reward/avg_raw_reward';

COMMENT ON COLUMN "progression_rows"."pass_at_k" IS 'the run''s reward/avg_pass_at_<k>';

COMMENT ON COLUMN "progression_rows"."kl_or_entropy" IS 'policy/policy_kl, or policy/policy_entropy for a run without a KL';

COMMENT ON COLUMN "progression_rows"."loss" IS 'the loss metric training_progression picks for the run';

COMMENT ON COLUMN "progression_rows"."kl_or_entropy_metric" IS 'which metric kl_or_entropy holds';

COMMENT ON COLUMN "progression_rows"."loss_metric" IS 'which metric loss holds';

COMMENT ON COLUMN "progression_rows"."epoch" IS 'trainer/epoch';

COMMENT ON COLUMN "progression_rows"."grad_norm" IS 'policy/raw_grad_norm';

COMMENT ON COLUMN "progression_rows"."ppo_clip_ratio" IS 'policy/ppo_clip_ratio';

COMMENT ON COLUMN "progression_rows"."policy_loss" IS 'policy/policy_loss';

COMMENT ON COLUMN "progression_rows"."log_ratio_mean" IS 'policy/log_ratio_abs_mean';

COMMENT ON COLUMN "progression_rows"."step_seconds" IS 'timing/step: the step''s seconds';

COMMENT ON COLUMN "progression_rows"."generation_wait_seconds" IS 'timing/wait_for_generation_buffer, seconds';

COMMENT ON COLUMN "reward_curve"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "reward_curve"."step" IS 'a deduplicated training step (first-seen row)';

COMMENT ON COLUMN "reward_curve"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "reward_curve"."reward" IS 'reward/avg_raw_reward';

COMMENT ON COLUMN "reward_curve"."pass_at_k" IS 'reward/avg_pass_at_<k> of the run';

COMMENT ON COLUMN "reward_curve"."k" IS 'the k of pass_at_k';

COMMENT ON COLUMN "reward_curve"."ema" IS 'EMA of the reward, alpha = 2/(span+1), seeded with the first reward';

COMMENT ON COLUMN "reward_curve"."rolling_mean" IS 'mean reward of the last `span` deduplicated steps (fewer at the start)';

COMMENT ON COLUMN "reward_summary"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "reward_summary"."trials" IS 'all trials';

COMMENT ON COLUMN "reward_summary"."trials_with_reward" IS 'trials with a reward';

COMMENT ON COLUMN "reward_summary"."mean_reward" IS 'mean reward over trials with one';

COMMENT ON COLUMN "reward_summary"."success_rate" IS 'share (0-1) of trials with a reward whose reward > 0';

COMMENT ON COLUMN "reward_summary"."trials_with_turns" IS 'trials with a turn count (n_episodes)';

COMMENT ON COLUMN "run_overview"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "run_overview"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "run_overview"."total_steps" IS 'the highest global step in the log (v1 name: not a count of steps)';

COMMENT ON COLUMN "run_overview"."metric_blocks" IS 'metric rows in the log';

COMMENT ON COLUMN "run_overview"."mean_reward" IS 'mean of reward/avg_raw_reward over the log''s rows';

COMMENT ON COLUMN "run_overview"."max_reward" IS 'max of reward/avg_raw_reward over the log''s rows';

COMMENT ON COLUMN "run_overview"."total_time_s" IS 'sum of timing/step over the log''s rows, seconds';

COMMENT ON COLUMN "run_overview"."max_step" IS 'the highest global step in the log (v2, what total_steps holds)';

COMMENT ON COLUMN "run_overview"."distinct_steps" IS 'how many different steps the log holds (v2, a re-run step counts once)';

COMMENT ON COLUMN "run_summary"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "run_summary"."steps" IS 'deduplicated training steps';

COMMENT ON COLUMN "run_summary"."trials" IS 'trials in the run';

COMMENT ON COLUMN "run_summary"."trials_with_reward" IS 'trials with a reward';

COMMENT ON COLUMN "run_summary"."success_rate" IS 'share (0-1) of trials with a reward whose reward > 0';

COMMENT ON COLUMN "run_summary"."mean_reward" IS 'mean reward over trials with a reward';

COMMENT ON COLUMN "run_summary"."final_ema" IS 'the EMA of the last deduplicated step';

COMMENT ON COLUMN "run_summary"."best_ema" IS 'the highest EMA over the steps';

COMMENT ON COLUMN "run_summary"."best_ema_step" IS 'the step of best_ema (ties to the earliest)';

COMMENT ON COLUMN "run_summary"."best_checkpoint_step" IS 'the step best_checkpoint selects (an eligible step), NULL when none is eligible';

COMMENT ON COLUMN "run_summary"."best_checkpoint_ema" IS 'the EMA at best_checkpoint_step';

COMMENT ON COLUMN "run_summary"."mean_step_time_s" IS 'mean of timing/step over deduplicated steps, seconds';

COMMENT ON COLUMN "run_summary"."training_time_s" IS 'timing/step summed over every metric row, seconds (a re-run step counts twice)';

COMMENT ON COLUMN "run_summary"."timeout_rate" IS 'share (0-1) of all trials that ended in AgentTimeoutError';

COMMENT ON COLUMN "run_summary"."context_length_rate" IS 'share (0-1) of all trials that ended in ContextLengthExceededError';

COMMENT ON COLUMN "run_summary"."mean_staleness" IS 'mean of async/staleness_mean over every metric row (async_health)';

COMMENT ON COLUMN "run_summary"."slowest_span" IS 'the direct child of step with the highest mean seconds (unattributed left out, ties by name)';

COMMENT ON COLUMN "run_summary"."slowest_span_mean_s" IS 'its mean seconds over the rows where it ran';

COMMENT ON COLUMN "run_summary"."slowest_span_share" IS 'its mean share of the step (0-1)';

COMMENT ON COLUMN "run_table"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "run_table"."steps" IS 'deduplicated training steps';

COMMENT ON COLUMN "run_table"."trials" IS 'trials in the run';

COMMENT ON COLUMN "run_table"."trials_with_reward" IS 'trials with a reward';

COMMENT ON COLUMN "run_table"."success_rate" IS 'share (0-1) of trials with a reward whose reward > 0';

COMMENT ON COLUMN "run_table"."mean_reward" IS 'mean reward over trials with a reward';

COMMENT ON COLUMN "run_table"."final_ema" IS 'the EMA of the last deduplicated step';

COMMENT ON COLUMN "run_table"."best_ema" IS 'the highest EMA over the steps';

COMMENT ON COLUMN "run_table"."best_ema_step" IS 'the step of best_ema (ties to the earliest)';

COMMENT ON COLUMN "run_table"."best_checkpoint_step" IS 'the step best_checkpoint selects (an eligible step), NULL when none is eligible';

COMMENT ON COLUMN "run_table"."best_checkpoint_ema" IS 'the EMA at best_checkpoint_step';

COMMENT ON COLUMN "run_table"."mean_step_time_s" IS 'mean of timing/step over deduplicated steps, seconds';

COMMENT ON COLUMN "run_table"."training_time_s" IS 'timing/step summed over every metric row, seconds (a re-run step counts twice)';

COMMENT ON COLUMN "run_table"."timeout_rate" IS 'share (0-1) of all trials that ended in AgentTimeoutError';

COMMENT ON COLUMN "run_table"."context_length_rate" IS 'share (0-1) of all trials that ended in ContextLengthExceededError';

COMMENT ON COLUMN "run_table"."mean_staleness" IS 'mean of async/staleness_mean over every metric row (async_health)';

COMMENT ON COLUMN "run_table"."slowest_span" IS 'the direct child of step with the highest mean seconds (unattributed left out, ties by name)';

COMMENT ON COLUMN "run_table"."slowest_span_mean_s" IS 'its mean seconds over the rows where it ran';

COMMENT ON COLUMN "run_table"."slowest_span_share" IS 'its mean share of the step (0-1)';

COMMENT ON COLUMN "run_table_map"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "run_table_map"."steps" IS 'deduplicated training steps';

COMMENT ON COLUMN "run_table_map"."trials" IS 'trials in the run';

COMMENT ON COLUMN "run_table_map"."trials_with_reward" IS 'trials with a reward';

COMMENT ON COLUMN "run_table_map"."success_rate" IS 'share (0-1) of trials with a reward whose reward > 0';

COMMENT ON COLUMN "run_table_map"."mean_reward" IS 'mean reward over trials with a reward';

COMMENT ON COLUMN "run_table_map"."final_ema" IS 'the EMA of the last deduplicated step';

COMMENT ON COLUMN "run_table_map"."best_ema" IS 'the highest EMA over the steps';

COMMENT ON COLUMN "run_table_map"."best_ema_step" IS 'the step of best_ema (ties to the earliest)';

COMMENT ON COLUMN "run_table_map"."best_checkpoint_step" IS 'the step best_checkpoint selects (an eligible step), NULL when none is eligible';

COMMENT ON COLUMN "run_table_map"."best_checkpoint_ema" IS 'the EMA at best_checkpoint_step';

COMMENT ON COLUMN "run_table_map"."mean_step_time_s" IS 'mean of timing/step over deduplicated steps, seconds';

COMMENT ON COLUMN "run_table_map"."training_time_s" IS 'timing/step summed over every metric row, seconds (a re-run step counts twice)';

COMMENT ON COLUMN "run_table_map"."timeout_rate" IS 'share (0-1) of all trials that ended in AgentTimeoutError';

COMMENT ON COLUMN "run_table_map"."context_length_rate" IS 'share (0-1) of all trials that ended in ContextLengthExceededError';

COMMENT ON COLUMN "run_table_map"."mean_staleness" IS 'mean of async/staleness_mean over every metric row (async_health)';

COMMENT ON COLUMN "run_table_map"."slowest_span" IS 'the direct child of step with the highest mean seconds (unattributed left out, ties by name)';

COMMENT ON COLUMN "run_table_map"."slowest_span_mean_s" IS 'its mean seconds over the rows where it ran';

COMMENT ON COLUMN "run_table_map"."slowest_span_share" IS 'its mean share of the step (0-1)';

COMMENT ON COLUMN "run_table_map"."config" IS 'MAP from dotted rl_config.yaml key to this run''s value as text (the differing keys, or -p keys)';

COMMENT ON COLUMN "span_seconds"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "span_seconds"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "span_seconds"."step" IS 'the training step (trainer/global_step, else global_step)';

COMMENT ON COLUMN "span_seconds"."row_no" IS 'the row''s position in the run''s metrics CSV (1 = first data row)';

COMMENT ON COLUMN "span_seconds"."span" IS 'the timing span: the timing/ column''s name without its prefix';

COMMENT ON COLUMN "span_seconds"."seconds" IS 'seconds the span took in that row';

COMMENT ON COLUMN "span_tree"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "span_tree"."span" IS 'a timing span the run recorded';

COMMENT ON COLUMN "span_tree"."parent" IS 'its nearest recorded declared ancestor, NULL for a root';

COMMENT ON COLUMN "span_tree"."region" IS 'step (inside a training step), outside (between steps) or undeclared';

COMMENT ON COLUMN "step_signals"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "step_signals"."step" IS 'a deduplicated training step (first-seen row)';

COMMENT ON COLUMN "step_signals"."entropy" IS 'policy/policy_entropy';

COMMENT ON COLUMN "step_signals"."grad_norm" IS 'policy/raw_grad_norm';

COMMENT ON COLUMN "step_signals"."log_ratio_mean" IS 'policy/log_ratio_abs_mean';

COMMENT ON COLUMN "step_signals"."timeouts_per_batch" IS 'batch_errors/avg_AgentTimeoutError: timeouts per rollout batch';

COMMENT ON COLUMN "step_signals"."context_length_per_batch" IS 'batch_errors/avg_ContextLengthExceededError: context-length failures per rollout batch';

COMMENT ON COLUMN "step_time_stack"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "step_time_stack"."step" IS 'a deduplicated training step';

COMMENT ON COLUMN "step_time_stack"."span" IS 'a recorded direct child of step, or `unattributed` for the step time no child covers';

COMMENT ON COLUMN "step_time_stack"."seconds" IS 'seconds of that span in the step''s row';

COMMENT ON COLUMN "step_time_stack"."step_seconds" IS 'timing/step of that row';

COMMENT ON COLUMN "step_timing"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "step_timing"."step" IS 'the training step (trainer/global_step, else global_step)';

COMMENT ON COLUMN "step_timing"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "step_timing"."span" IS 'a timing span recorded in that row (timing/ prefix dropped)';

COMMENT ON COLUMN "step_timing"."seconds" IS 'seconds of the span';

COMMENT ON COLUMN "step_timing"."share_of_step" IS 'seconds / timing/step of that row (1.0 for step itself)';

COMMENT ON COLUMN "steps"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "steps"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "steps"."step" IS 'the training step (trainer/global_step, else global_step)';

COMMENT ON COLUMN "steps"."row_no" IS 'the row''s position in the run''s metrics CSV (1 = first data row)';

COMMENT ON COLUMN "steps"."source_file" IS 'the metrics CSV the row was read from (absolute path)';

COMMENT ON COLUMN "steps"."trainer/global_step" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."global_step" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."reward/avg_raw_reward" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/step" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."async/staleness_mean" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."async/staleness_max" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."async/discard_rate" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."async/discarded_count" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."reward/avg_pass_at_4" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/wait_for_generation_buffer" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/policy_train" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/run_training" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/sync_weights" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/save_checkpoints" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "steps"."timing/mystery_span" IS 'a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in seconds), NULL where the row has no value';

COMMENT ON COLUMN "timing_breakdown"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "timing_breakdown"."span" IS 'a timing span, `unattributed` or `overlap`';

COMMENT ON COLUMN "timing_breakdown"."within" IS 'its parent span: `-` for step, `outside step`, `not declared`';

COMMENT ON COLUMN "timing_breakdown"."mean_seconds" IS 'mean seconds over the rows where it ran';

COMMENT ON COLUMN "timing_breakdown"."share_of_within" IS 'mean over all rows of span/parent (0 where it did not run), NULL without a parent';

COMMENT ON COLUMN "timing_breakdown"."steps" IS 'metric rows where it ran';

COMMENT ON COLUMN "timing_spans"."span" IS 'a timing span the trainer declares';

COMMENT ON COLUMN "timing_spans"."parent" IS 'its declared parent span (NULL for a root)';

COMMENT ON COLUMN "timing_spans"."region" IS '`step` inside a training step, `outside` between steps';

COMMENT ON COLUMN "timing_table"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "timing_table"."span" IS 'a timing span, `unattributed` or `overlap`';

COMMENT ON COLUMN "timing_table"."within" IS 'its parent span: `-` for step, `outside step`, `not declared`';

COMMENT ON COLUMN "timing_table"."mean_seconds" IS 'mean seconds over the rows where it ran';

COMMENT ON COLUMN "timing_table"."share_of_within" IS 'mean over all rows of span/parent (0 where it did not run), NULL without a parent';

COMMENT ON COLUMN "timing_table"."share_of_step" IS 'mean over the rows where step ran of span/step (an outside span''s can pass 1), NULL for overlap';

COMMENT ON COLUMN "timing_table"."steps" IS 'metric rows where it ran';

COMMENT ON COLUMN "token_usage"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "token_usage"."outcome" IS 'Success (reward > 0), Failure (reward = 0) or No reward (no reward, or no trials row)';

COMMENT ON COLUMN "token_usage"."trials" IS 'trials with at least one step that is not copied context';

COMMENT ON COLUMN "token_usage"."agent_steps" IS 'their agent steps that are not copied context';

COMMENT ON COLUMN "token_usage"."mean_prompt_tokens" IS 'mean over trials of their agent steps'' prompt_tokens (a trial without any left out)';

COMMENT ON COLUMN "token_usage"."mean_completion_tokens" IS 'mean over trials of their agent steps'' completion_tokens (a trial without any left out)';

COMMENT ON COLUMN "token_usage"."cached_share" IS 'cached tokens / prompt tokens, summed over the agent steps that have both (NULL without any)';

COMMENT ON COLUMN "token_usage"."p50_completion_tokens" IS 'median of the trials'' completion tokens (linear interpolation)';

COMMENT ON COLUMN "token_usage"."p90_completion_tokens" IS '90th percentile of the trials'' completion tokens (linear interpolation)';

COMMENT ON COLUMN "token_usage"."max_step_prompt_tokens" IS 'the largest prompt_tokens of a single agent step';

COMMENT ON COLUMN "tool_calls"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "tool_calls"."trial_name" IS 'the trial folder''s name (the trials view''s trial_name)';

COMMENT ON COLUMN "tool_calls"."segment" IS '0 for trajectory.json, N for trajectory.cont-N.json';

COMMENT ON COLUMN "tool_calls"."step_id" IS 'the step_id of the step that made the call';

COMMENT ON COLUMN "tool_calls"."turn" IS 'the agent turn of that step (trajectory_steps.turn), NULL for a copied step';

COMMENT ON COLUMN "tool_calls"."call_index" IS '0-based position of the call in the step''s tool_calls';

COMMENT ON COLUMN "tool_calls"."tool_call_id" IS 'the call''s tool_call_id, as written';

COMMENT ON COLUMN "tool_calls"."function_name" IS 'the tool called, as written (terminus-2: bash_command, mark_task_complete)';

COMMENT ON COLUMN "tool_calls"."arguments" IS 'the arguments object as canonical JSON text (keys sorted at every depth, `,` and `:` with no spaces, non-ASCII kept)';

COMMENT ON COLUMN "tool_calls"."observation_chars" IS 'characters of the step''s observation results whose source_call_id is this call''s tool_call_id (string content: its length, parts: their text''s lengths), 0 when none';

COMMENT ON COLUMN "tool_calls"."copied" IS 'true when the step that made the call is copied context';

COMMENT ON COLUMN "tool_usage"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "tool_usage"."function_name" IS 'the tool called (tool_calls.function_name)';

COMMENT ON COLUMN "tool_usage"."calls" IS 'calls of that tool';

COMMENT ON COLUMN "tool_usage"."trials" IS 'distinct trials with at least one call of it';

COMMENT ON COLUMN "tool_usage"."success_trials" IS 'those of them whose outcome is Success (reward > 0)';

COMMENT ON COLUMN "tool_usage"."failure_trials" IS 'those of them whose outcome is Failure (reward = 0)';

COMMENT ON COLUMN "tool_usage"."mean_calls_per_trial" IS 'calls / trials';

COMMENT ON COLUMN "training_progression"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "training_progression"."step" IS 'a deduplicated training step (first-seen row)';

COMMENT ON COLUMN "training_progression"."log_file" IS 'the trainer console log the row came from (e.g. job_554408)';

COMMENT ON COLUMN "training_progression"."reward" IS 'reward/avg_raw_reward';

COMMENT ON COLUMN "training_progression"."pass_at_k" IS 'reward/avg_pass_at_<k> of the run';

COMMENT ON COLUMN "training_progression"."k" IS 'the k of pass_at_k (n_samples_per_prompt)';

COMMENT ON COLUMN "training_progression"."kl_or_entropy" IS 'policy/policy_kl, or policy/policy_entropy for a run that never logs a KL';

COMMENT ON COLUMN "training_progression"."kl_or_entropy_metric" IS 'which of the two metrics kl_or_entropy holds';

COMMENT ON COLUMN "training_progression"."loss" IS 'the first of loss/final_loss, policy/final_loss, policy/policy_loss the run logs';

COMMENT ON COLUMN "training_progression"."loss_metric" IS 'which metric loss holds';

COMMENT ON COLUMN "training_progression"."step_seconds" IS 'timing/step: the step''s seconds';

COMMENT ON COLUMN "training_progression"."generation_wait_seconds" IS 'timing/wait_for_generation_buffer: seconds waiting for rollouts';

COMMENT ON COLUMN "trajectory_steps"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "trajectory_steps"."trial_name" IS 'the trial folder''s name (the trials view''s trial_name)';

COMMENT ON COLUMN "trajectory_steps"."segment" IS '0 for trajectory.json, N for trajectory.cont-N.json (a continuation after a context summarisation)';

COMMENT ON COLUMN "trajectory_steps"."step_id" IS 'the step''s `step_id` (from 1 in each segment)';

COMMENT ON COLUMN "trajectory_steps"."turn" IS '1-based ordinal of the step among the trial''s agent steps that are not copied context, by (segment, step_id), NULL for other steps';

COMMENT ON COLUMN "trajectory_steps"."source" IS 'who wrote the step: system, user or agent';

COMMENT ON COLUMN "trajectory_steps"."ts" IS 'the step''s `timestamp` as UTC (an offset applied, none read as UTC), NULL when absent or not of the form YYYY-MM-DD[(T| )HH:MM[:SS[.ffffff]][Z|+HH:MM|-HH:MM]]';

COMMENT ON COLUMN "trajectory_steps"."model_name" IS 'the step''s model_name, else its segment''s agent.model_name';

COMMENT ON COLUMN "trajectory_steps"."message_chars" IS 'characters (code points) of the message: a string''s length, or the lengths of the text of its parts of type text (an image counts 0)';

COMMENT ON COLUMN "trajectory_steps"."reasoning_chars" IS 'characters of reasoning_content, 0 without one';

COMMENT ON COLUMN "trajectory_steps"."tool_calls" IS 'how many tool calls the step made (0 for none)';

COMMENT ON COLUMN "trajectory_steps"."prompt_tokens" IS 'the step''s metrics.prompt_tokens (context tokens, cached ones included), NULL when absent or not a whole number from 0 to 2**53';

COMMENT ON COLUMN "trajectory_steps"."completion_tokens" IS 'the step''s metrics.completion_tokens, NULL when absent or not a whole number from 0 to 2**53';

COMMENT ON COLUMN "trajectory_steps"."cached_tokens" IS 'the step''s metrics.cached_tokens (the part of prompt_tokens served from the cache), NULL when absent or not a whole number from 0 to 2**53';

COMMENT ON COLUMN "trajectory_steps"."cost_usd" IS 'the step''s metrics.cost_usd, NULL when absent';

COMMENT ON COLUMN "trajectory_steps"."copied" IS 'true for a step copied from an earlier segment for context (is_copied_context), else false';

COMMENT ON COLUMN "trial_phases"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "trial_phases"."phase" IS 'environment_setup, agent_setup, agent_execution, verifier, then unattributed or overlap';

COMMENT ON COLUMN "trial_phases"."median_s" IS 'median seconds over trials with the phase';

COMMENT ON COLUMN "trial_phases"."mean_s" IS 'mean seconds over trials with the phase';

COMMENT ON COLUMN "trial_phases"."total_s" IS 'summed seconds';

COMMENT ON COLUMN "trial_phases"."share_of_trial" IS 'total_s / summed trial_duration of trials that have one (0-1)';

COMMENT ON COLUMN "trial_phases"."trials" IS 'trials with the phase';

COMMENT ON COLUMN "trial_rows"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "trial_rows"."row_no" IS 'the trial''s position: CSV row order, or the sorted trial folder names for result.json files';

COMMENT ON COLUMN "trial_rows"."task_name" IS 'the task the trial ran (e.g. calendar-0042), several trials per task';

COMMENT ON COLUMN "trial_rows"."trial_name" IS 'the trial''s unique name, `<task>__<7-character id>`';

COMMENT ON COLUMN "trial_rows"."n_episodes" IS 'agent turns (terminus-2 episodes), NULL when the agent never ran';

COMMENT ON COLUMN "trial_rows"."n_input_tokens" IS 'input tokens the agent used (cached tokens included)';

COMMENT ON COLUMN "trial_rows"."n_output_tokens" IS 'output tokens the agent generated';

COMMENT ON COLUMN "trial_rows"."exception_type" IS 'the exception that ended the trial (Python class name), `No exception` when none';

COMMENT ON COLUMN "trial_rows"."reward" IS 'the verifier''s raw reward (usually 0 or 1), NULL when the verifier did not run';

COMMENT ON COLUMN "trial_rows"."outcome" IS 'Success (reward > 0) or Failure (reward = 0), NULL without a reward or for a negative one';

COMMENT ON COLUMN "trial_rows"."agent_duration_sec" IS 'agent execution seconds (older parsers, replaced by the phase columns)';

COMMENT ON COLUMN "trial_rows"."trial_duration" IS 'the whole trial''s seconds (newest parser)';

COMMENT ON COLUMN "trial_rows"."environment_setup_duration" IS 'seconds to set up the sandbox environment';

COMMENT ON COLUMN "trial_rows"."agent_setup_duration" IS 'seconds to set up the agent';

COMMENT ON COLUMN "trial_rows"."agent_execution_duration" IS 'seconds the agent ran';

COMMENT ON COLUMN "trial_rows"."verifier_duration" IS 'seconds the verifier ran';

COMMENT ON COLUMN "trial_rows"."exception_message" IS 'the exception''s message (result.json only, NULL for a trials CSV)';

COMMENT ON COLUMN "trial_rows"."started_at" IS 'when the trial started, UTC (result.json only, NULL for a trials CSV)';

COMMENT ON COLUMN "trial_rows"."finished_at" IS 'when the trial finished, UTC (result.json only, NULL for a trials CSV)';

COMMENT ON COLUMN "trials"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "trials"."row_no" IS 'the trial''s position: CSV row order, or the sorted trial folder names for result.json files';

COMMENT ON COLUMN "trials"."task_name" IS 'the task the trial ran (e.g. calendar-0042), several trials per task';

COMMENT ON COLUMN "trials"."trial_name" IS 'the trial''s unique name, `<task>__<7-character id>`';

COMMENT ON COLUMN "trials"."n_episodes" IS 'agent turns (terminus-2 episodes), NULL when the agent never ran';

COMMENT ON COLUMN "trials"."n_input_tokens" IS 'input tokens the agent used (cached tokens included)';

COMMENT ON COLUMN "trials"."n_output_tokens" IS 'output tokens the agent generated';

COMMENT ON COLUMN "trials"."exception_type" IS 'the exception that ended the trial (Python class name), `No exception` when none';

COMMENT ON COLUMN "trials"."reward" IS 'the verifier''s raw reward (usually 0 or 1), NULL when the verifier did not run';

COMMENT ON COLUMN "trials"."outcome" IS 'Success (reward > 0) or Failure (reward = 0), NULL without a reward or for a negative one';

COMMENT ON COLUMN "trials"."agent_duration_sec" IS 'agent execution seconds (older parsers, replaced by the phase columns)';

COMMENT ON COLUMN "trials"."trial_duration" IS 'the whole trial''s seconds (newest parser)';

COMMENT ON COLUMN "trials"."environment_setup_duration" IS 'seconds to set up the sandbox environment';

COMMENT ON COLUMN "trials"."agent_setup_duration" IS 'seconds to set up the agent';

COMMENT ON COLUMN "trials"."agent_execution_duration" IS 'seconds the agent ran';

COMMENT ON COLUMN "trials"."verifier_duration" IS 'seconds the verifier ran';

COMMENT ON COLUMN "trials"."treatment" IS 'the route the run''s config gives the exception type: none, passthrough, mask or zero';

COMMENT ON COLUMN "trials"."effective_treatment" IS 'the treatment the trial really got: a passthrough trial without a reward is masked';

COMMENT ON COLUMN "trials"."exception_message" IS 'the exception''s message (result.json only, NULL for a trials CSV)';

COMMENT ON COLUMN "trials"."started_at" IS 'when the trial started, UTC (result.json only, NULL for a trials CSV)';

COMMENT ON COLUMN "trials"."finished_at" IS 'when the trial finished, UTC (result.json only, NULL for a trials CSV)';

COMMENT ON COLUMN "turn_histogram"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "turn_histogram"."turns" IS 'a number of agent turns (n_episodes)';

COMMENT ON COLUMN "turn_histogram"."trials" IS 'trials that took exactly that many turns';

COMMENT ON COLUMN "turn_percentiles"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "turn_percentiles"."exception_type" IS '`All trials` first, then each exception type (`No exception` for none)';

COMMENT ON COLUMN "turn_percentiles"."trials" IS 'trials with a turn count (n_episodes)';

COMMENT ON COLUMN "turn_percentiles"."p50" IS '50th percentile of turns (linear interpolation)';

COMMENT ON COLUMN "turn_percentiles"."p75" IS '75th percentile of turns';

COMMENT ON COLUMN "turn_percentiles"."p90" IS '90th percentile of turns';

COMMENT ON COLUMN "turn_percentiles"."p95" IS '95th percentile of turns';

COMMENT ON COLUMN "turn_percentiles"."p99" IS '99th percentile of turns';

COMMENT ON COLUMN "turn_percentiles"."max" IS 'most turns';

COMMENT ON COLUMN "turn_stats"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "turn_stats"."trials" IS 'trials with a turn count (n_episodes)';

COMMENT ON COLUMN "turn_stats"."mean" IS 'mean turns';

COMMENT ON COLUMN "turn_stats"."median" IS 'median turns (mean of the two middle values for an even count)';

COMMENT ON COLUMN "turn_stats"."std" IS 'sample standard deviation of turns (n-1)';

COMMENT ON COLUMN "turn_stats"."min" IS 'fewest turns';

COMMENT ON COLUMN "turn_stats"."max" IS 'most turns';

COMMENT ON COLUMN "turns_by_exception"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "turns_by_exception"."exception_type" IS 'the exception that ended the trial (Python class name), `No exception` when none';

COMMENT ON COLUMN "turns_by_exception"."trials" IS 'trials with a turn count (n_episodes)';

COMMENT ON COLUMN "turns_by_exception"."mean_turns" IS 'mean turns';

COMMENT ON COLUMN "turns_by_exception"."median_turns" IS 'median turns';

COMMENT ON COLUMN "turns_by_outcome"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "turns_by_outcome"."outcome" IS 'Success (reward > 0) or Failure (reward = 0)';

COMMENT ON COLUMN "turns_by_outcome"."trials" IS 'trials with turns and a reward';

COMMENT ON COLUMN "turns_by_outcome"."mean_turns" IS 'mean turns';

COMMENT ON COLUMN "turns_by_outcome"."median_turns" IS 'median turns';

COMMENT ON COLUMN "vllm_seconds"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "vllm_seconds"."log_file" IS 'the vLLM engine log the second came from';

COMMENT ON COLUMN "vllm_seconds"."row_no" IS 'the row''s position in the run''s vLLM CSV (1 = first data row)';

COMMENT ON COLUMN "vllm_seconds"."datetime_str" IS 'the second as logged, `MM-DD HH:MM:SS`, without a year (never order by it)';

COMMENT ON COLUMN "vllm_seconds"."ts" IS 'the second as a TIMESTAMP: year from the file''s parse date, a month-day more than one day after it is the year before';

COMMENT ON COLUMN "vllm_seconds"."n_engines_reporting" IS 'engines that printed a stat line in this second';

COMMENT ON COLUMN "vllm_seconds"."unique_ips" IS 'distinct nodes among them';

COMMENT ON COLUMN "vllm_seconds"."total_prompt_throughput_tokens_per_sec" IS 'prompt tokens per second summed over the engines reporting (not a cluster total)';

COMMENT ON COLUMN "vllm_seconds"."total_generation_throughput_tokens_per_sec" IS 'generated tokens per second summed over the engines reporting (not a cluster total)';

COMMENT ON COLUMN "vllm_seconds"."total_running_requests" IS 'running requests summed over the engines reporting';

COMMENT ON COLUMN "vllm_seconds"."total_waiting_requests" IS 'waiting (queued) requests summed over the engines reporting';

COMMENT ON COLUMN "vllm_seconds"."avg_prompt_throughput_per_engine" IS 'prompt tokens per second per engine';

COMMENT ON COLUMN "vllm_seconds"."avg_generation_throughput_per_engine" IS 'generated tokens per second per engine';

COMMENT ON COLUMN "vllm_seconds"."avg_running_requests_per_engine" IS 'running requests per engine';

COMMENT ON COLUMN "vllm_seconds"."avg_waiting_requests_per_engine" IS 'waiting requests per engine';

COMMENT ON COLUMN "vllm_seconds"."avg_gpu_kv_cache_usage_pct" IS 'GPU KV-cache usage, percent (0-100), mean over the engines';

COMMENT ON COLUMN "vllm_seconds"."avg_prefix_cache_hit_rate_pct" IS 'prefix-cache hit rate, percent (0-100), mean over the engines';

COMMENT ON COLUMN "vllm_seconds"."min_running_requests" IS 'fewest running requests on one engine';

COMMENT ON COLUMN "vllm_seconds"."max_running_requests" IS 'most running requests on one engine';

COMMENT ON COLUMN "vllm_seconds"."min_generation_throughput" IS 'lowest generation throughput of one engine, tokens per second';

COMMENT ON COLUMN "vllm_seconds"."max_generation_throughput" IS 'highest generation throughput of one engine, tokens per second';

COMMENT ON COLUMN "vllm_series"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "vllm_series"."log_file" IS 'the vLLM engine log';

COMMENT ON COLUMN "vllm_series"."ts" IS 'the first second of the time slice';

COMMENT ON COLUMN "vllm_series"."seconds" IS 'seconds with a stat line in the slice';

COMMENT ON COLUMN "vllm_series"."avg_generation_throughput_per_engine" IS 'mean generated tokens per second per engine over the slice';

COMMENT ON COLUMN "vllm_series"."avg_running_requests_per_engine" IS 'mean running requests per engine over the slice';

COMMENT ON COLUMN "vllm_series"."avg_waiting_requests_per_engine" IS 'mean waiting requests per engine over the slice';

COMMENT ON COLUMN "vllm_series"."avg_prefix_cache_hit_rate_pct" IS 'mean prefix-cache hit rate over the slice, percent (0-100)';

COMMENT ON COLUMN "vllm_summary"."run" IS 'the run: its folder''s name';

COMMENT ON COLUMN "vllm_summary"."log_file" IS 'the vLLM engine log';

COMMENT ON COLUMN "vllm_summary"."seconds" IS 'stat lines (seconds with one) in the log, v1 name: not wall-clock seconds';

COMMENT ON COLUMN "vllm_summary"."mean_engines_reporting" IS 'mean engines reporting per stat line';

COMMENT ON COLUMN "vllm_summary"."mean_running_per_engine" IS 'mean of avg_running_requests_per_engine';

COMMENT ON COLUMN "vllm_summary"."max_total_running" IS 'max of total_running_requests';

COMMENT ON COLUMN "vllm_summary"."mean_total_waiting" IS 'mean of total_waiting_requests';

COMMENT ON COLUMN "vllm_summary"."max_total_waiting" IS 'max of total_waiting_requests';

COMMENT ON COLUMN "vllm_summary"."mean_generation_tps_per_engine" IS 'mean generated tokens per second per engine';

COMMENT ON COLUMN "vllm_summary"."max_total_generation_tps" IS 'max of total generation throughput, tokens per second';

COMMENT ON COLUMN "vllm_summary"."mean_kv_cache_pct" IS 'mean GPU KV-cache usage, percent (0-100)';

COMMENT ON COLUMN "vllm_summary"."mean_prefix_cache_hit_pct" IS 'mean prefix-cache hit rate, percent (0-100)';

COMMENT ON COLUMN "vllm_summary"."utilization" IS 'underutilized, well-utilized, low throughput or moderate (rule in the description)';

COMMENT ON COLUMN "vllm_summary"."stat_lines" IS 'rows (seconds with a stat line) in the log (v2, what seconds holds)';
