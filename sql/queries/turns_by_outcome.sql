-- name: turns_by_outcome
-- version: 1
-- description: Agent turns by outcome over trials with both turns and a reward: Success (reward > 0) first,
--   then Failure (reward = 0), a negative reward is neither.
-- grain: run, outcome
-- column: run: the run: its folder's name
-- column: outcome: Success (reward > 0) or Failure (reward = 0)
-- column: trials: trials with turns and a reward
-- column: mean_turns: mean turns
-- column: median_turns: median turns
-- turn counts are whole numbers with a few hundred distinct values: the median comes from how many trials
-- have each value (a hash aggregate over those keys), not from sorting every trial as quantile_cont does
-- (bench/RESULTS.md). Exact: the mean of the values at sorted positions floor and ceil of (n-1)/2.
WITH
    counts AS (
        SELECT run, outcome, n_episodes AS turns, count(*) AS n
        FROM trial_rows
        WHERE n_episodes IS NOT NULL AND outcome IS NOT NULL
        GROUP BY run, outcome, n_episodes
    ),
    ranked AS (
        -- upto: the group's trials with at most this many turns (the value fills sorted positions upto-n .. upto-1)
        SELECT run, outcome, turns, n,
            sum(n) OVER (PARTITION BY run, outcome ORDER BY turns ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
            CAST(sum(n) OVER (PARTITION BY run, outcome) AS BIGINT) AS trials
        FROM counts
    ),
    groups AS (
        SELECT
            run,
            outcome,
            any_value(trials) AS trials,
            -- the sum exact (DECIMAL), as avg's over whole numbers: a DOUBLE sum of large values depends on their order
            CAST(sum(CAST(turns AS DECIMAL(38, 0)) * n) AS DOUBLE) / any_value(trials) AS mean_turns,
            min(turns) FILTER (WHERE upto > floor(CAST(trials - 1 AS DOUBLE) * 0.5)) AS lo,
            min(turns) FILTER (WHERE upto > ceil(CAST(trials - 1 AS DOUBLE) * 0.5)) AS hi
        FROM ranked
        GROUP BY run, outcome
    )
SELECT
    run,
    outcome,
    trials,
    mean_turns,
    (lo + hi) / 2.0 AS median_turns
FROM groups
ORDER BY run, outcome = 'Failure', outcome
