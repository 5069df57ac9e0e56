-- name: trial_rows
-- version: 1
-- description: One row per Harbor trial, from the run's trials CSV, else from its trace_jobs/*/result.json, without the exception routing (the `trials` view adds it): run, row_no (CSV order; sorted trial folder names for result.json files), task and trial names, n_episodes (turns), tokens, exception_type (`No exception` when empty), reward, outcome (Success: reward > 0, Failure: reward = 0), durations; then, read from result.json only (NULL for a CSV), exception_message, started_at and finished_at. Queries that aggregate read this view and route per exception type afterwards, not per trial.
-- grain: run, trial_name
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
    t.started_at,
    t.finished_at
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
) AS t
