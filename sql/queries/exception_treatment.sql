-- name: exception_treatment
-- version: 1
-- description: Trials per effective treatment (none, passthrough, mask, zero, a passthrough trial without a
--   reward counts as mask) with their percent of the run's trials and the exception types routed there.
-- grain: run, treatment
-- column: run: the run: its folder's name
-- column: treatment: the effective treatment: none, passthrough, mask or zero
-- column: trials: trials that got it
-- column: pct: percent (0-100) of the run's trials
-- column: exception_types: the distinct exception types routed so, sorted, joined with `, `
WITH
    per_type AS (
        -- count first, route after: the routing is needed once per (run, exception type, has a reward)
        SELECT run, exception_type, reward IS NULL AS no_reward, count(*) AS trials
        FROM trial_rows
        GROUP BY run, exception_type, reward IS NULL
    ),
    routed AS (
        SELECT
            p.*,
            route_exception(p.exception_type, r) AS configured
        FROM per_type AS p
        LEFT JOIN exception_routing AS r ON r.run = p.run
    )
SELECT
    run,
    CASE WHEN configured = 'passthrough' AND no_reward THEN 'mask' ELSE configured END AS treatment,
    sum(trials) AS trials,
    100.0 * sum(trials) / sum(sum(trials)) OVER (PARTITION BY run) AS pct,
    array_to_string(list_sort(list(DISTINCT exception_type)), ', ') AS exception_types
FROM routed
GROUP BY run, CASE WHEN configured = 'passthrough' AND no_reward THEN 'mask' ELSE configured END
ORDER BY run, list_position(['none', 'passthrough', 'mask', 'zero'], treatment)
