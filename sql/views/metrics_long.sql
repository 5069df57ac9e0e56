-- name: metrics_long
-- version: 1
-- description: Every recorded numeric metric value in long form: run, log_file, step, row_no, metric (the
--   column name, e.g. reward/avg_raw_reward), value. Empty cells have no row.
-- grain: run, row_no, metric
-- column: run: the run: its folder's name
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: step: the training step (trainer/global_step, else global_step)
-- column: row_no: the row's position in the run's metrics CSV (1 = first data row)
-- column: metric: the metric column's name (e.g. reward/avg_raw_reward)
-- column: value: its value in that row (rows without one are left out)
UNPIVOT (
    SELECT run, log_file, step, row_no, * EXCLUDE (run, log_file, step, row_no, source_file, global_step)
    FROM metric_rows
)
ON COLUMNS(* EXCLUDE (run, log_file, step, row_no))
INTO NAME metric VALUE value
