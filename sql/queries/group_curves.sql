-- name: group_curves
-- version: 1
-- description: Runs grouped by the value of one rl_config.yaml key (seeds of one config as one band): per value
--   and deduplicated step, how many runs have an EMA of reward/avg_raw_reward there (reward_curve's, with
--   `span`), their mean, sample standard deviation, 95% interval (mean -/+ 1.96 x std / sqrt(runs)), minimum and
--   maximum. The runs without the key (or without a config) are one group whose value is NULL, with no `key`
--   every run is in that group.
-- param: key VARCHAR = NULL: the config key to group by, a dotted path as the `config` view names it (e.g.
--   trainer.seed)
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- grain: value, step
-- column: key: the config key grouped by
-- column: value: the key's value as text (`null` for a YAML null), NULL for the runs without the key
-- column: step: a deduplicated training step
-- column: runs: runs of the group with an EMA at the step
-- column: mean_ema: the mean of their EMAs
-- column: std_ema: the sample standard deviation of their EMAs, NULL for one run
-- column: ci_low: mean_ema - 1.96 x std_ema / sqrt(runs)
-- column: ci_high: mean_ema + 1.96 x std_ema / sqrt(runs)
-- column: min_ema: the lowest of their EMAs
-- column: max_ema: the highest of their EMAs
WITH
    grouped AS (
        SELECT c.run, r.step, r.ema, coalesce(k.value, CASE WHEN k.key IS NOT NULL THEN 'null' END) AS value
        FROM reward_curve AS r
        JOIN runs AS c ON c.run = r.run
        LEFT JOIN config AS k ON k.run = c.run AND k.key = {{ param('key') }}
        WHERE r.ema IS NOT NULL
    ),
    bands AS (
        SELECT value, step, count(*) AS runs, avg(ema) AS mean_ema, stddev_samp(ema) AS std_ema,
               min(ema) AS min_ema, max(ema) AS max_ema
        FROM grouped
        GROUP BY value, step
    )
SELECT
    {{ param('key') }} AS key,
    value,
    step,
    runs,
    mean_ema,
    std_ema,
    mean_ema - 1.96 * std_ema / sqrt(runs) AS ci_low,
    mean_ema + 1.96 * std_ema / sqrt(runs) AS ci_high,
    min_ema,
    max_ema
FROM bands
ORDER BY value, step
