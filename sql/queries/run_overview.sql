-- name: run_overview
-- version: 1
-- description: One row per run and log: the log's highest global step, its metric rows, the mean and max of reward/avg_raw_reward over its rows, and the summed timing/step seconds.
-- grain: run, log_file
SELECT
    run,
    log_file,
    max(step) AS total_steps,
    count(*) AS metric_blocks,
    avg("reward/avg_raw_reward") AS mean_reward,
    max("reward/avg_raw_reward") AS max_reward,
    sum("timing/step") AS total_time_s
FROM metric_rows
GROUP BY run, log_file
ORDER BY run, log_file
