-- name: metric_stats
-- version: 2
-- description: Per run, metric family (the part of the column name before the first `/`: async, generate,
--   loss, policy, reward, system, timing, trainer, batch_errors, ..., `other` for a key without a `/`) and
--   metric: mean, sample standard deviation (n-1, NULL below two values), min, max and count of the recorded
--   values over every metric row of the run (a re-run step counts once per log, as the parser's report does).
--   Families in that order, then others by name, `other` last, metrics by name.
-- grain: run, metric
-- column: run: the run: its folder's name
-- column: family: the metric's family: its name before the first `/` (async, generate, ...), `other` without
--   one
-- column: metric: the metric column's full name
-- column: mean: mean of its recorded values over every metric row
-- column: std: sample standard deviation (n-1), NULL below two values
-- column: min: smallest recorded value
-- column: max: largest recorded value
-- column: count: metric rows with a value (a re-run step counts once per log)
SELECT
    run,
    CASE WHEN contains(metric, '/') THEN split_part(metric, '/', 1) ELSE 'other' END AS family,
    metric,
    -- fsum (compensated summation) keeps the mean at the correctly rounded value, so printed figures round
    -- as they would from the exact mean even when a mean of 4-decimal values falls on a rounding tie
    fsum(value) / count(value) AS mean,
    stddev_samp(value) AS std,
    min(value) AS min,
    max(value) AS max,
    count(value) AS count
FROM metrics_long
GROUP BY run, metric
ORDER BY
    run,
    coalesce(
        list_position(
            ['async', 'generate', 'loss', 'policy', 'reward', 'system', 'timing', 'trainer', 'batch_errors'],
            CASE WHEN contains(metric, '/') THEN split_part(metric, '/', 1) END
        ),
        CASE WHEN contains(metric, '/') THEN 100 ELSE 101 END
    ),
    family,
    metric
