-- name: span_seconds
-- version: 1
-- description: One row per metric row and recorded timing span: run, log_file, step, row_no, span (the timing/ column without its prefix), seconds.
-- grain: run, row_no, span
SELECT run, log_file, step, row_no, substr(metric, length('timing/') + 1) AS span, value AS seconds
FROM metrics_long
WHERE starts_with(metric, 'timing/')
