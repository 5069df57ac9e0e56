-- name: reward_curve
-- version: 1
-- description: Reward per deduplicated step (first-seen row): reward/avg_raw_reward, the run's pass@k and its
--   k, the EMA (alpha = 2/(span+1), seeded with the first reward) and the rolling mean of the last `span`
--   steps.
-- param: span INTEGER = 5, min 1: EMA span and rolling window, in deduplicated steps
-- grain: run, step
-- column: run: the run: its folder's name
-- column: step: a deduplicated training step (first-seen row)
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: reward: reward/avg_raw_reward
-- column: pass_at_k: reward/avg_pass_at_<k> of the run
-- column: k: the k of pass_at_k
-- column: ema: EMA of the reward, alpha = 2/(span+1), seeded with the first reward
-- column: rolling_mean: mean reward of the last `span` deduplicated steps (fewer at the start)
WITH
    pass_columns AS (
        SELECT run, metric, CAST(regexp_extract(metric, '^reward/avg_pass_at_([0-9]+)$', 1) AS INTEGER) AS k
        FROM metrics_long
        WHERE regexp_full_match(metric, 'reward/avg_pass_at_[0-9]+')
        GROUP BY run, metric
        -- a run logs one pass@k (k = n_samples_per_prompt); should it log several, take the lowest k
        QUALIFY row_number() OVER (PARTITION BY run ORDER BY k) = 1
    ),
    points AS (
        SELECT s.run, s.step, s.log_file, s."reward/avg_raw_reward" AS reward, l.value AS pass_at_k, p.k
        FROM steps AS s
        LEFT JOIN pass_columns AS p ON p.run = s.run
        LEFT JOIN metrics_long AS l ON l.run = s.run AND l.row_no = s.row_no AND l.metric = p.metric
    )
SELECT
    run,
    step,
    log_file,
    reward,
    pass_at_k,
    k,
    CASE WHEN reward IS NOT NULL THEN
        ema_last(
            -- the last ema_depth(span) + 1 rewards (older ones weigh below a double's precision), not every
            -- step's: memory linear in the steps; NULL rewards are a partition of their own, outside the frame
            list(reward ORDER BY step) OVER (
                PARTITION BY run, reward IS NULL ORDER BY step
                ROWS BETWEEN ema_depth({{ param('span') }}) PRECEDING AND CURRENT ROW
            ),
            {{ param('span') }}
        )
    END AS ema,
    avg(reward) OVER (
        PARTITION BY run ORDER BY step ROWS BETWEEN {{ param('span') }} - 1 PRECEDING AND CURRENT ROW
    ) AS rolling_mean
FROM points
ORDER BY run, step
