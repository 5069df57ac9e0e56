-- name: checkpoint_ema
-- version: 1
-- description: The EMA table behind best_checkpoint: one row per run and deduplicated step with reward, ema and rolling_mean (from reward_curve), the run's save_every (parameter, else trainer.hf_save_interval, else 20), eligible (the step has an EMA, is a multiple of save_every and at least 2*save_every) and is_best (the eligible step with the highest EMA, ties to the earliest).
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps (default: the run's trainer.hf_save_interval, else 20)
-- grain: run, step
WITH
    configured AS (
        SELECT run, arg_min(TRY_CAST(value AS INTEGER), ordinal) AS hf_save_interval
        FROM config
        WHERE key = 'trainer.hf_save_interval'
        GROUP BY run
    ),
    marked AS (
        SELECT
            c.run,
            c.step,
            c.reward,
            c.ema,
            c.rolling_mean,
            coalesce(
                {{ param('save_every') }},
                CASE WHEN f.hf_save_interval >= 1 THEN f.hf_save_interval END,
                20
            ) AS save_every
        FROM reward_curve AS c
        LEFT JOIN configured AS f ON f.run = c.run
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
