-- name: async_health
-- version: 1
-- description: Fully async trainer health per run: mean of async/staleness_mean and max of
--   async/staleness_max over every metric row, mean async/discard_rate (0-1), and deduplicated steps that
--   discarded samples.
-- grain: run
-- column: run: the run: its folder's name
-- column: mean_staleness: mean of async/staleness_mean over every metric row
-- column: max_staleness: max of async/staleness_max over every metric row
-- column: mean_discard_rate: mean of async/discard_rate (0-1)
-- column: steps_with_discards: deduplicated steps with async/discarded_count > 0 (or discard_rate > 0 without
--   a count)
WITH
    over_rows AS (
        SELECT
            run,
            avg("async/staleness_mean") AS mean_staleness,
            max("async/staleness_max") AS max_staleness,
            avg("async/discard_rate") AS mean_discard_rate
        FROM metric_rows
        GROUP BY run
    ),
    over_steps AS (
        SELECT run, count(*) FILTER (
            WHERE coalesce("async/discarded_count" > 0, "async/discard_rate" > 0)
        ) AS steps_with_discards
        FROM steps
        GROUP BY run
    )
SELECT r.run, r.mean_staleness, r.max_staleness, r.mean_discard_rate, coalesce(s.steps_with_discards, 0) AS steps_with_discards
FROM over_rows AS r
LEFT JOIN over_steps AS s ON s.run = r.run
ORDER BY r.run
