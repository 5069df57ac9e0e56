-- name: span_seconds
-- version: 1
-- description: One row per metric row and recorded timing span: run, log_file, step, row_no, span (the
--   timing/ column without its prefix), seconds.
-- grain: run, row_no, span
-- column: run: the run: its folder's name
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: step: the training step (trainer/global_step, else global_step)
-- column: row_no: the row's position in the run's metrics CSV (1 = first data row)
-- column: span: the timing span: the timing/ column's name without its prefix
-- column: seconds: seconds the span took in that row
SELECT run, log_file, step, row_no, substr(metric, length('timing/') + 1) AS span, value AS seconds
FROM metrics_long
WHERE starts_with(metric, 'timing/')
