-- name: exception_distribution
-- version: 1
-- description: Trials per exception type (`No exception` for none) with their percent of the run's trials and the treatment the run's config routes the type to, most frequent first, ties in order of first appearance in the CSV.
-- grain: run, exception_type
WITH per_type AS (
    -- count first, route after: the routing is needed once per (run, exception type), not per trial
    SELECT run, exception_type, count(*) AS trials, min(row_no) AS first_row
    FROM trial_rows
    GROUP BY run, exception_type
)
SELECT
    p.run,
    p.exception_type,
    p.trials,
    100.0 * p.trials / sum(p.trials) OVER (PARTITION BY p.run) AS pct,
    route_exception(p.exception_type, r) AS treatment
FROM per_type AS p
LEFT JOIN exception_routing AS r ON r.run = p.run
ORDER BY p.run, p.trials DESC, p.first_row
