-- name: exception_distribution
-- version: 1
-- description: Trials per exception type (`No exception` for none) with their percent of the run's trials and the treatment the run's config routes the type to; most frequent first, ties in order of first appearance in the CSV.
-- grain: run, exception_type
SELECT
    run,
    exception_type,
    count(*) AS trials,
    100.0 * count(*) / sum(count(*)) OVER (PARTITION BY run) AS pct,
    any_value(treatment) AS treatment
FROM trials
GROUP BY run, exception_type
ORDER BY run, trials DESC, min(row_no)
