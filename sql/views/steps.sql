-- name: steps
-- version: 2
-- description: One metric row per (run, step): the first-seen row in CSV order, the one the checkpoint
--   selector uses when a resumed job re-ran a step.
-- grain: run, step
-- column: run: the run: its folder's name
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: step: the training step (trainer/global_step, else global_step)
-- column: row_no: the row's position in the run's metrics CSV (1 = first data row)
-- column: source_file: the metrics CSV the row was read from (absolute path)
-- column: *: a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in
--   seconds), NULL where the row has no value
SELECT *
FROM metric_rows
WHERE step IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY run, step ORDER BY row_no) = 1
