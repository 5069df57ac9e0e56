-- name: turns_by_exception
-- version: 1
-- description: Agent turns per exception type over trials with turns (`No exception` for a clean trial):
--   trials, mean and median turns, highest mean first.
-- grain: run, exception_type
-- column: run: the run: its folder's name
-- column: exception_type: the exception that ended the trial (Python class name), `No exception` when none
-- column: trials: trials with a turn count (n_episodes)
-- column: mean_turns: mean turns
-- column: median_turns: median turns
SELECT
    run,
    exception_type,
    count(*) AS trials,
    avg(n_episodes) AS mean_turns,
    quantile_cont(n_episodes, 0.5) AS median_turns
FROM trial_rows
WHERE n_episodes IS NOT NULL
GROUP BY run, exception_type
ORDER BY run, mean_turns DESC, exception_type
