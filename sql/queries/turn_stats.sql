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
SELECT
    f.run,
    coalesce(t.trials, 0) AS trials,
    t.mean,
    t.median,
    t.std,
    t.min,
    t.max
-- every run with trials (a CSV, or Harbor's result.json files) has a row, even without a usable trial
FROM (SELECT DISTINCT run FROM run_files WHERE artifact IN ('trials', 'harbor')) AS f
-- aggregate first, join the few runs after: a join of every trial to the run list costs more than the statistics
LEFT JOIN (
    SELECT
        run,
        count(n_episodes) AS trials,
        avg(n_episodes) AS mean,
        quantile_cont(n_episodes, 0.5) AS median,
        stddev_samp(n_episodes) AS std,
        min(n_episodes) AS min,
        max(n_episodes) AS max
    FROM trial_rows
    GROUP BY run
) AS t ON t.run = f.run
ORDER BY f.run
