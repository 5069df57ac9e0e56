-- name: trial_phases
-- version: 1
-- description: Where a trial's time goes: per phase (environment_setup, agent_setup, agent_execution or older files' agent_duration_sec, verifier) the median, mean and total seconds and the share of the summed trial_duration, then the time no phase covers (unattributed) or the excess of phases over the trial (overlap). No rows when the files have no phase column.
-- grain: run, phase
WITH
    phases AS (
        SELECT
            run,
            row_no,
            trial_duration,
            environment_setup_duration AS environment_setup,
            agent_setup_duration AS agent_setup,
            coalesce(agent_execution_duration, agent_duration_sec) AS agent_execution,
            verifier_duration AS verifier
        FROM trial_rows
    ),
    long AS (
        UNPIVOT phases
        ON environment_setup, agent_setup, agent_execution, verifier
        INTO NAME phase VALUE seconds
    ),
    trial_totals AS (
        SELECT run, sum(trial_duration) AS total_trial_s FROM phases GROUP BY run
    ),
    per_phase AS (
        SELECT
            run,
            phase,
            quantile_cont(seconds, 0.5) AS median_s,
            avg(seconds) AS mean_s,
            sum(seconds) AS total_s,
            sum(seconds) FILTER (WHERE trial_duration IS NOT NULL) AS timed_s,
            count(*) AS trials
        FROM long
        GROUP BY run, phase
    ),
    residuals AS (
        -- per trial with a trial_duration: the seconds no phase accounts for (negative: phases overlap)
        SELECT
            run,
            trial_duration
                - coalesce(environment_setup, 0) - coalesce(agent_setup, 0)
                - coalesce(agent_execution, 0) - coalesce(verifier, 0) AS residual
        FROM phases
        WHERE trial_duration IS NOT NULL
    ),
    residual_rows AS (
        SELECT run, sum(residual) >= 0 AS uncovered, quantile_cont(residual, 0.5) AS median_residual, sum(residual) AS total,
            count(*) AS trials
        FROM residuals
        GROUP BY run
    )
SELECT run, phase, median_s, mean_s, total_s, share_of_trial, trials FROM (
    SELECT p.run, p.phase, p.median_s, p.mean_s, p.total_s, p.timed_s / t.total_trial_s AS share_of_trial, p.trials,
        list_position(['environment_setup', 'agent_setup', 'agent_execution', 'verifier'], p.phase) AS position
    FROM per_phase AS p
    JOIN trial_totals AS t ON t.run = p.run
    UNION ALL
    SELECT
        r.run,
        CASE WHEN r.uncovered THEN 'unattributed' ELSE 'overlap' END,
        CASE WHEN r.uncovered THEN r.median_residual ELSE -r.median_residual END,
        abs(r.total) / r.trials,
        abs(r.total),
        CASE WHEN r.uncovered THEN r.total / t.total_trial_s END,
        r.trials,
        5
    FROM residual_rows AS r
    JOIN trial_totals AS t ON t.run = r.run
)
ORDER BY run, position
