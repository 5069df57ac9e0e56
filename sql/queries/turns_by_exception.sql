-- name: turns_by_exception
-- version: 1
-- description: Agent turns per exception type over trials with turns (`No exception` for a clean trial): trials, mean and median turns, highest mean first.
-- grain: run, exception_type
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
