-- name: turn_percentiles
-- version: 1
-- description: Percentiles of agent turns (linear interpolation, as pandas) over trials with turns: first
--   `All trials`, then each exception type by name.
-- grain: run, exception_type
-- column: run: the run: its folder's name
-- column: exception_type: `All trials` first, then each exception type (`No exception` for none)
-- column: trials: trials with a turn count (n_episodes)
-- column: p50: 50th percentile of turns (linear interpolation)
-- column: p75: 75th percentile of turns
-- column: p90: 90th percentile of turns
-- column: p95: 95th percentile of turns
-- column: p99: 99th percentile of turns
-- column: max: most turns
-- one pass over the trials: GROUPING SETS gives each run's `All trials` row and its per-type rows together
WITH groups AS (
    SELECT
        run,
        exception_type,
        grouping(exception_type) AS every,
        count(*) AS trials,
        quantile_cont(n_episodes, [0.5, 0.75, 0.9, 0.95, 0.99]) AS q,
        max(n_episodes) AS max
    FROM trial_rows
    WHERE n_episodes IS NOT NULL
    GROUP BY GROUPING SETS ((run), (run, exception_type))
)
SELECT
    run,
    CASE WHEN every = 1 THEN 'All trials' ELSE exception_type END AS exception_type,
    trials, q[1] AS p50, q[2] AS p75, q[3] AS p90, q[4] AS p95, q[5] AS p99, max
FROM groups
ORDER BY run, every DESC, exception_type
