-- name: tool_usage
-- version: 1
-- description: The tools the agent called, per run: calls, the trials that called each, how many of them
--   succeeded or failed, and calls per calling trial. Copied-context steps (a continuation's copy of an earlier
--   segment) are left out. Ordered by run, calls descending, function_name.
-- grain: run, function_name
-- column: run: the run: its folder's name
-- column: function_name: the tool called (tool_call_names.function_name, as in tool_calls)
-- column: calls: calls of that tool
-- column: trials: distinct trials with at least one call of it
-- column: success_trials: those of them whose outcome is Success (reward > 0)
-- column: failure_trials: those of them whose outcome is Failure (reward = 0)
-- column: mean_calls_per_trial: calls / trials
WITH per_trial AS (
    -- each trial's calls of each tool first: the join to the trials is then one row per trial and tool
    SELECT run, trial_name, function_name, count(*) AS calls
    FROM tool_call_names
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
ORDER BY p.run, calls DESC, p.function_name
