-- name: task_rates
-- version: 1
-- description: Each run's tasks with at least one rewarded trial: the trials with a reward, the successes among
--   them (reward > 0) and their share. The task grid of the compare page and task_diff read it.
-- grain: run, task_name
-- column: run: the run: its folder's name
-- column: task_name: the task the trials ran
-- column: trials: the task's trials with a reward
-- column: successes: those whose reward > 0
-- column: rate: successes / trials (0-1)
SELECT
    run,
    task_name,
    count(*) AS trials,
    count(CASE WHEN reward > 0 THEN 1 END) AS successes,
    avg(CASE WHEN reward > 0 THEN 1.0 ELSE 0.0 END) AS rate
FROM trial_rows
WHERE reward IS NOT NULL AND task_name IS NOT NULL
GROUP BY run, task_name
