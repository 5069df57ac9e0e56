-- name: trials
-- version: 1
-- description: One row per Harbor trial, from the run's trials CSV, else from its trace_jobs/*/result.json: run, row_no (CSV order, sorted trial folder names for result.json files), task and trial names, n_episodes (turns), tokens, exception_type (`No exception` when empty), reward, outcome (Success: reward > 0, Failure: reward = 0), durations, treatment (the route the config gives the exception type) and effective_treatment (a passthrough trial without a reward is masked), then, read from result.json only (NULL for a CSV), exception_message, started_at and finished_at.
-- grain: run, trial_name
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
LEFT JOIN exception_routing AS r ON r.run = t.run
