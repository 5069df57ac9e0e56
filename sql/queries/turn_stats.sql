-- name: turn_stats
-- version: 1
-- description: Agent turns (n_episodes) over the trials that have them: count, mean, median (average of the
--   two middle values for an even count), sample standard deviation (n-1), min and max.
-- grain: run
-- column: run: the run: its folder's name
-- column: trials: trials with a turn count (n_episodes)
-- column: mean: mean turns
-- column: median: median turns (mean of the two middle values for an even count)
-- column: std: sample standard deviation of turns (n-1)
-- column: min: fewest turns
-- column: max: most turns
-- turn counts are whole numbers with a few hundred distinct values: the statistics come from how many
-- trials have each value (a hash aggregate over those keys, then a few hundred rows), not from a sort of
-- every trial, which quantile_cont needs (10M trials: ~0.04 against ~0.2 CPU-s, bench/RESULTS.md). Exact:
-- the median is the mean of the values at sorted positions floor and ceil of (n-1)/2.
WITH
    counts AS (
        SELECT run, n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL
        GROUP BY run, n_episodes
    ),
    ranked AS (
        -- upto: trials with at most this many turns; a value sits at the 0-based sorted positions
        -- upto - n .. upto - 1
        SELECT run, turns, n,
            sum(n) OVER (PARTITION BY run ORDER BY turns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run) AS BIGINT) AS trials,
            -- the sum exact (DECIMAL), as avg's over whole numbers: a DOUBLE sum of large values depends on their order
            CAST(sum(CAST(turns AS DECIMAL(38, 0)) * n) OVER (PARTITION BY run) AS DOUBLE)
                / sum(n) OVER (PARTITION BY run) AS mean
        FROM counts
    ),
    t AS (
        SELECT
            run,
            any_value(trials) AS trials,
            any_value(mean) AS mean,
            -- the values at sorted positions floor and ceil of (n-1)/2: the same one for an odd count
            min(turns) FILTER (WHERE upto > floor(CAST(trials - 1 AS DOUBLE) * 0.5)) AS lo,
            min(turns) FILTER (WHERE upto > ceil(CAST(trials - 1 AS DOUBLE) * 0.5)) AS hi,
            -- sample variance (n-1), two-pass over the distinct values: sum of n * (value - mean)^2
            CASE WHEN any_value(trials) > 1
                THEN sqrt(sum(n * (turns - mean) * (turns - mean)) / (any_value(trials) - 1)) END AS std,
            min(turns) AS min,
            max(turns) AS max
        FROM ranked
        GROUP BY run
    )
SELECT
    f.run,
    coalesce(t.trials, 0) AS trials,
    t.mean,
    (t.lo + t.hi) / 2.0 AS median,
    t.std,
    t.min,
    t.max
-- every run with trials (a CSV, or Harbor's result.json files) has a row, even without a usable trial
FROM (SELECT DISTINCT run FROM run_files WHERE artifact IN ('trials', 'harbor')) AS f
LEFT JOIN t ON t.run = f.run
ORDER BY f.run
