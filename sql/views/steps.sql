-- name: steps
-- version: 1
-- description: One metric row per (run, step): the first-seen row in CSV order, the one the checkpoint selector uses when a resumed job re-ran a step.
-- grain: run, step
SELECT *
FROM metric_rows
WHERE step IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY run, step ORDER BY row_no) = 1
