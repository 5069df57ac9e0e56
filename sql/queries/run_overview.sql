-- name: run_overview
-- version: 2
-- description: One row per run and log: the log's highest global step, its metric rows, the mean and max of
--   reward/avg_raw_reward over its rows, and the summed timing/step seconds. Version 2 adds max_step (the
--   same highest step under an honest name) and distinct_steps (how many different steps the log holds),
--   after the v1 columns, which stay as they were.
-- grain: run, log_file
-- column: run: the run: its folder's name
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: total_steps: the highest global step in the log (v1 name: not a count of steps)
-- column: metric_blocks: metric rows in the log
-- column: mean_reward: mean of reward/avg_raw_reward over the log's rows
-- column: max_reward: max of reward/avg_raw_reward over the log's rows
-- column: total_time_s: sum of timing/step over the log's rows, seconds
-- column: max_step: the highest global step in the log (v2, what total_steps holds)
-- column: distinct_steps: how many different steps the log holds (v2, a re-run step counts once)
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
ORDER BY run, log_file
