-- name: checkpoint_ema
-- version: 1
-- description: The EMA table behind best_checkpoint: one row per run and deduplicated step with reward, ema
--   and rolling_mean (from reward_curve), the run's save_every (from checkpoint_settings), eligible (the step
--   has an EMA, is a multiple of save_every and at least 2*save_every) and is_best (the eligible step with
--   the highest EMA, ties to the earliest).
-- grain: run, step
-- column: run: the run: its folder's name
-- column: step: a deduplicated training step (first-seen row)
-- column: reward: reward/avg_raw_reward of that step
-- column: ema: the EMA of the reward (span parameter, alpha = 2/(span+1))
-- column: rolling_mean: mean reward of the last `span` deduplicated steps
-- column: save_every: the run's checkpoint interval (checkpoint_settings)
-- column: eligible: true when the step has an EMA, is a multiple of save_every and at least 2*save_every
-- column: is_best: true for the eligible step with the highest EMA (ties to the earliest)
WITH
    marked AS (
        SELECT c.run, c.step, c.reward, c.ema, c.rolling_mean, s.save_every
        FROM reward_curve AS c
        JOIN checkpoint_settings AS s ON s.run = c.run
    ),
    eligibility AS (
        SELECT *, coalesce(ema IS NOT NULL AND step % save_every = 0 AND step >= 2 * save_every, false) AS eligible
        FROM marked
    )
SELECT
    run,
    step,
    reward,
    ema,
    rolling_mean,
    save_every,
    eligible,
    eligible AND row_number() OVER (PARTITION BY run, eligible ORDER BY ema DESC, step) = 1 AS is_best
FROM eligibility
ORDER BY run, step
