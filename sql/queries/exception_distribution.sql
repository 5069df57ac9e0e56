-- name: exception_distribution
-- version: 1
-- description: Trials per exception type (`No exception` for none) with their percent of the run's trials and
--   the treatment the run's config routes the type to, most frequent first, ties in order of first appearance
--   in the CSV.
-- grain: run, exception_type
-- column: run: the run: its folder's name
-- column: exception_type: the exception that ended the trial (Python class name), `No exception` when none
-- column: trials: trials that ended so
-- column: pct: percent (0-100) of the run's trials
-- column: treatment: the route the run's config gives the type: none, passthrough, mask or zero
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
