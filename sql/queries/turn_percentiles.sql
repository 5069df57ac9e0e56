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
WITH
    turns AS (
        SELECT run, exception_type, n_episodes FROM trial_rows WHERE n_episodes IS NOT NULL
    ),
    groups AS (
        SELECT run, 0 AS section, 'All trials' AS exception_type, count(*) AS trials,
            quantile_cont(n_episodes, [0.5, 0.75, 0.9, 0.95, 0.99]) AS q, max(n_episodes) AS max
        FROM turns
        GROUP BY run
        UNION ALL
        SELECT run, 1, exception_type, count(*),
            quantile_cont(n_episodes, [0.5, 0.75, 0.9, 0.95, 0.99]), max(n_episodes)
        FROM turns
        GROUP BY run, exception_type
    )
SELECT run, exception_type, trials, q[1] AS p50, q[2] AS p75, q[3] AS p90, q[4] AS p95, q[5] AS p99, max
FROM groups
ORDER BY run, section, exception_type
