-- name: turns_by_exception
-- version: 1
-- description: Agent turns per exception type over trials with turns (`No exception` for a clean trial):
--   trials, mean and median turns, highest mean first.
-- grain: run, exception_type
-- column: run: the run: its folder's name
-- column: exception_type: the exception that ended the trial (Python class name), `No exception` when none
-- column: trials: trials with a turn count (n_episodes)
-- column: mean_turns: mean turns
-- column: median_turns: median turns
-- turn counts are whole numbers with a few hundred distinct values: the median comes from how many trials
-- have each value (a hash aggregate over those keys), not from sorting every trial as quantile_cont does
-- (bench/RESULTS.md). Exact: the mean of the values at sorted positions floor and ceil of (n-1)/2.
WITH
    counts AS (
        SELECT run, exception_type, n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL
        GROUP BY run, exception_type, n_episodes
    ),
    ranked AS (
        -- upto: the group's trials with at most this many turns (the value fills sorted positions upto-n .. upto-1)
        SELECT run, exception_type, turns, n,
            sum(n) OVER (PARTITION BY run, exception_type ORDER BY turns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run, exception_type) AS BIGINT) AS trials
        FROM counts
    ),
    groups AS (
        SELECT
            run,
            exception_type,
            any_value(trials) AS trials,
            -- the sum exact (DECIMAL), as avg's over whole numbers: a DOUBLE sum of large values depends on their order
            CAST(sum(CAST(turns AS DECIMAL(38, 0)) * n) AS DOUBLE) / any_value(trials) AS mean_turns,
            min(turns) FILTER (WHERE upto > floor(CAST(trials - 1 AS DOUBLE) * 0.5)) AS lo,
            min(turns) FILTER (WHERE upto > ceil(CAST(trials - 1 AS DOUBLE) * 0.5)) AS hi
        FROM ranked
        GROUP BY run, exception_type
    )
SELECT
    run,
    exception_type,
    trials,
    mean_turns,
    (lo + hi) / 2.0 AS median_turns
FROM groups
ORDER BY run, mean_turns DESC, exception_type
