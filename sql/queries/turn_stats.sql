-- name: turn_stats
-- version: 1
-- description: Agent turns (n_episodes) over the trials that have them: count, mean, median (average of the two middle values for an even count), sample standard deviation (n-1), min and max.
-- grain: run
SELECT
    f.run,
    count(t.n_episodes) AS trials,
    avg(t.n_episodes) AS mean,
    quantile_cont(t.n_episodes, 0.5) AS median,
    stddev_samp(t.n_episodes) AS std,
    min(t.n_episodes) AS min,
    max(t.n_episodes) AS max
FROM run_files AS f
LEFT JOIN trials AS t ON t.run = f.run
WHERE f.artifact = 'trials'
GROUP BY f.run
ORDER BY f.run
