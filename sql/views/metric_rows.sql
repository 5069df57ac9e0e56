-- name: metric_rows
-- version: 1
-- description: Every trainer metric row of every run, as logged (a re-run step appears once per log): run, log_file, step (trainer/global_step, else global_step), row_no (CSV order), source_file, then every metric column.
-- grain: run, row_no
SELECT
    run,
    log_file,
    CAST(coalesce("trainer/global_step", global_step) AS BIGINT) AS step,
    row_no,
    source_file,
    * EXCLUDE (run, log_file, row_no, source_file)
FROM metrics_src
