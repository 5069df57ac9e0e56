-- name: metrics_long
-- version: 1
-- description: Every recorded numeric metric value in long form: run, log_file, step, row_no, metric (the column name, e.g. reward/avg_raw_reward), value. Empty cells have no row.
-- grain: run, row_no, metric
UNPIVOT (
    SELECT run, log_file, step, row_no, * EXCLUDE (run, log_file, step, row_no, source_file, global_step)
    FROM metric_rows
)
ON COLUMNS(* EXCLUDE (run, log_file, step, row_no))
INTO NAME metric VALUE value
