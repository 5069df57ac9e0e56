-- name: best_checkpoint
-- version: 1
-- description: The checkpoint the EMA selector picks per run: among eligible steps (multiples of save_every
--   from 2*save_every on, the first save is skipped) the highest EMA of reward/avg_raw_reward, ties to the
--   earliest step. save_every defaults to the config's trainer.hf_save_interval, else 20.
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps
--   (default: the run's trainer.hf_save_interval, else 20)
-- grain: run
-- column: run: the run: its folder's name
-- column: step: the selected checkpoint step, NULL when no step is eligible
-- column: ema: the EMA of the reward at that step
-- column: reward: reward/avg_raw_reward at that step
-- column: save_every: the checkpoint interval used
-- column: eligible_steps: how many steps were eligible
-- column: reason: why the step was chosen, or why none could be
WITH per_run AS (
    SELECT
        run,
        count(*) FILTER (WHERE eligible) AS eligible_steps,
        max(step) FILTER (WHERE ema IS NOT NULL) AS last_step
    FROM checkpoint_ema
    GROUP BY run
)
SELECT
    s.run,
    b.step,
    b.ema,
    b.reward,
    s.save_every,
    coalesce(p.eligible_steps, 0) AS eligible_steps,
    CASE
        WHEN b.step IS NOT NULL THEN printf(
            'highest %d-step EMA among %d eligible steps (multiples of %d from step %d)',
            {{ param('span') }}, p.eligible_steps, s.save_every, 2 * s.save_every
        )
        WHEN p.last_step IS NULL THEN 'no step has a reward (reward/avg_raw_reward is empty or absent)'
        ELSE printf(
            'no eligible step: eligible steps are multiples of %d from step %d, and the last step with a reward is %d',
            s.save_every, 2 * s.save_every, p.last_step
        )
    END AS reason
FROM checkpoint_settings AS s
LEFT JOIN checkpoint_ema AS b ON b.run = s.run AND b.is_best
LEFT JOIN per_run AS p ON p.run = s.run
ORDER BY s.run
