-- name: best_checkpoint
-- version: 1
-- description: The checkpoint the EMA selector picks per run: among eligible steps (multiples of save_every from 2*save_every on; the first save is skipped) the highest EMA of reward/avg_raw_reward, ties to the earliest step. save_every defaults to the config's trainer.hf_save_interval, else 20.
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps (default: the run's trainer.hf_save_interval, else 20)
-- grain: run
WITH
    metric_runs AS (
        SELECT run FROM run_files WHERE artifact = 'metrics'
    ),
    configured AS (
        SELECT run, arg_min(TRY_CAST(value AS INTEGER), ordinal) AS hf_save_interval
        FROM config
        WHERE key = 'trainer.hf_save_interval'
        GROUP BY run
    ),
    settings AS (
        SELECT
            m.run,
            coalesce(
                {{ param('save_every') }},
                CASE WHEN c.hf_save_interval >= 1 THEN c.hf_save_interval END,
                20
            ) AS save_every
        FROM metric_runs AS m
        LEFT JOIN configured AS c ON c.run = m.run
    ),
    eligible AS (
        SELECT c.run, c.step, c.ema, c.reward
        FROM reward_curve AS c
        JOIN settings AS s ON s.run = c.run
        WHERE c.ema IS NOT NULL AND c.step % s.save_every = 0 AND c.step >= 2 * s.save_every
    ),
    ranked AS (
        SELECT *, row_number() OVER (PARTITION BY run ORDER BY ema DESC, step) AS rank, count(*) OVER (PARTITION BY run) AS n
        FROM eligible
    ),
    rewarded AS (
        SELECT run, max(step) AS last_step FROM reward_curve WHERE ema IS NOT NULL GROUP BY run
    )
SELECT
    s.run,
    b.step,
    b.ema,
    b.reward,
    s.save_every,
    coalesce(b.n, 0) AS eligible_steps,
    CASE
        WHEN b.step IS NOT NULL THEN printf(
            'highest %d-step EMA among %d eligible steps (multiples of %d from step %d)',
            {{ param('span') }}, b.n, s.save_every, 2 * s.save_every
        )
        WHEN w.last_step IS NULL THEN 'no step has a reward (reward/avg_raw_reward is empty or absent)'
        ELSE printf(
            'no eligible step: eligible steps are multiples of %d from step %d, and the last step with a reward is %d',
            s.save_every, 2 * s.save_every, w.last_step
        )
    END AS reason
FROM settings AS s
LEFT JOIN ranked AS b ON b.run = s.run AND b.rank = 1
LEFT JOIN rewarded AS w ON w.run = s.run
ORDER BY s.run
