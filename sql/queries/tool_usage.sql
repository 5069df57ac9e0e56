-- name: tool_usage
-- version: 1
-- description: The tools the agent called, per run: calls, the trials that called each, how many of them
--   succeeded or failed, and calls per calling trial. Copied-context steps (a continuation's copy of an earlier
--   segment) are left out. Ordered by run, calls descending, function_name.
-- grain: run, function_name
-- column: run: the run: its folder's name
-- column: function_name: the tool called (tool_calls.function_name)
-- column: calls: calls of that tool
-- column: trials: distinct trials with at least one call of it
-- column: success_trials: those of them whose outcome is Success (reward > 0)
-- column: failure_trials: those of them whose outcome is Failure (reward = 0)
-- column: mean_calls_per_trial: calls / trials
WITH calls AS (
    SELECT c.run, c.trial_name, c.function_name, t.outcome
    FROM tool_calls AS c
    LEFT JOIN trial_rows AS t ON t.run = c.run AND t.trial_name = c.trial_name
    WHERE NOT c.copied
)
SELECT
    run,
    function_name,
    count(*) AS calls,
    count(DISTINCT trial_name) AS trials,
    count(DISTINCT trial_name) FILTER (WHERE outcome = 'Success') AS success_trials,
    count(DISTINCT trial_name) FILTER (WHERE outcome = 'Failure') AS failure_trials,
    count(*) / count(DISTINCT trial_name) AS mean_calls_per_trial
FROM calls
GROUP BY run, function_name
ORDER BY run, calls DESC, function_name
