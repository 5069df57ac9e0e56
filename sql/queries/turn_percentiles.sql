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
{%- set quantiles = [("p50", "0.5"), ("p75", "0.75"), ("p90", "0.9"), ("p95", "0.95"), ("p99", "0.99")] %}
-- turn counts are whole numbers with a few hundred distinct values: the percentiles come from how many
-- trials have each value (one hash aggregate over those keys, then a few thousand rows), not from sorting
-- every trial as quantile_cont does (bench/RESULTS.md). Exact: the value at sorted position (n-1)*q,
-- interpolated between the values at its floor and ceiling as quantile_cont does (in DOUBLE, as it does).
WITH
    by_type AS (
        SELECT run, exception_type, n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL
        GROUP BY run, exception_type, n_episodes
    ),
    counts AS (
        -- each run's `All trials` group (every = 1) beside its per-type groups
        SELECT run, exception_type, 0 AS every, turns, n FROM by_type
        UNION ALL
        SELECT run, CAST(NULL AS VARCHAR), 1, turns, sum(n) FROM by_type GROUP BY run, turns
    ),
    ranked AS (
        -- upto: the group's trials with at most this many turns (the value fills sorted positions upto-n .. upto-1)
        SELECT run, exception_type, every, turns,
            sum(n) OVER (PARTITION BY run, every, exception_type ORDER BY turns
                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run, every, exception_type) - 1 AS DOUBLE) AS last
        FROM counts
    ),
    groups AS (
        SELECT
            run,
            exception_type,
            every,
            CAST(any_value(last) AS BIGINT) + 1 AS trials
            {%- for name, q in quantiles %},
            min(turns) FILTER (WHERE upto > floor(last * CAST({{ q | lit }} AS DOUBLE))) AS {{ (name ~ "_lo") | ident }},
            min(turns) FILTER (WHERE upto > ceil(last * CAST({{ q | lit }} AS DOUBLE))) AS {{ (name ~ "_hi") | ident }},
            any_value(last * CAST({{ q | lit }} AS DOUBLE) - floor(last * CAST({{ q | lit }} AS DOUBLE))) AS {{ (name ~ "_frac") | ident }}
            {%- endfor %},
            max(turns) AS max
        FROM ranked
        GROUP BY run, exception_type, every
    )
SELECT
    run,
    CASE WHEN every = 1 THEN 'All trials' ELSE exception_type END AS exception_type,
    trials
    {%- for name, q in quantiles %},
    CAST({{ (name ~ "_lo") | ident }} AS DOUBLE)
        + ({{ (name ~ "_hi") | ident }} - {{ (name ~ "_lo") | ident }}) * {{ (name ~ "_frac") | ident }} AS {{ name | ident }}
    {%- endfor %},
    max
FROM groups
ORDER BY run, every DESC, exception_type
