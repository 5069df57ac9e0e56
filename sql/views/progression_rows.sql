-- name: progression_rows
-- version: 1
-- description: Every metric row with a step, for the progression table: run, step, log_file, row_no, used
--   (the first-seen row of its step, the one the deduplicated curve and the checkpoint selector use), rerun
--   (the step was logged more than once), reward, pass_at_k, kl_or_entropy and loss with kl_or_entropy_metric
--   and loss_metric (the metrics training_progression picks for the run), epoch (trainer/epoch), grad_norm
--   (policy/raw_grad_norm), ppo_clip_ratio (policy/ppo_clip_ratio), policy_loss (policy/policy_loss),
--   log_ratio_mean (policy/log_ratio_abs_mean), step_seconds (timing/step) and generation_wait_seconds
--   (timing/wait_for_generation_buffer), NULL where the run does not log the metric.
-- grain: run, row_no
-- column: run: the run: its folder's name
-- column: step: the training step
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: row_no: the row's position in the run's metrics CSV (1 = first data row)
-- column: used: true for the first-seen row of its step (the one the curve and the checkpoint selector use)
-- column: rerun: true when the step was logged more than once
-- column: reward: reward/avg_raw_reward
-- column: pass_at_k: the run's reward/avg_pass_at_<k>
-- column: kl_or_entropy: policy/policy_kl, or policy/policy_entropy for a run without a KL
-- column: loss: the loss metric training_progression picks for the run
-- column: kl_or_entropy_metric: which metric kl_or_entropy holds
-- column: loss_metric: which metric loss holds
-- column: epoch: trainer/epoch
-- column: grad_norm: policy/raw_grad_norm
-- column: ppo_clip_ratio: policy/ppo_clip_ratio
-- column: policy_loss: policy/policy_loss
-- column: log_ratio_mean: policy/log_ratio_abs_mean
-- column: step_seconds: timing/step: the step's seconds
-- column: generation_wait_seconds: timing/wait_for_generation_buffer, seconds
WITH
    choice AS (
        SELECT DISTINCT run, k, kl_or_entropy_metric, loss_metric FROM training_progression
    ),
    wide AS (
        SELECT
            l.run,
            l.row_no,
            max(l.value) FILTER (WHERE l.metric = 'reward/avg_pass_at_' || c.k) AS pass_at_k,
            max(l.value) FILTER (WHERE l.metric = c.kl_or_entropy_metric) AS kl_or_entropy,
            max(l.value) FILTER (WHERE l.metric = c.loss_metric) AS loss,
            max(l.value) FILTER (WHERE l.metric = 'trainer/epoch') AS epoch,
            max(l.value) FILTER (WHERE l.metric = 'policy/raw_grad_norm') AS grad_norm,
            max(l.value) FILTER (WHERE l.metric = 'policy/ppo_clip_ratio') AS ppo_clip_ratio,
            max(l.value) FILTER (WHERE l.metric = 'policy/policy_loss') AS policy_loss,
            max(l.value) FILTER (WHERE l.metric = 'policy/log_ratio_abs_mean') AS log_ratio_mean,
            max(l.value) FILTER (WHERE l.metric = 'timing/wait_for_generation_buffer') AS generation_wait_seconds
        FROM metrics_long AS l
        LEFT JOIN choice AS c ON c.run = l.run
        GROUP BY l.run, l.row_no
    )
SELECT
    m.run,
    m.step,
    m.log_file,
    m.row_no,
    m.row_no = s.row_no AS used,
    count(*) OVER (PARTITION BY m.run, m.step) > 1 AS rerun,
    m."reward/avg_raw_reward" AS reward,
    w.pass_at_k,
    w.kl_or_entropy,
    w.loss,
    c.kl_or_entropy_metric,
    c.loss_metric,
    w.epoch,
    w.grad_norm,
    w.ppo_clip_ratio,
    w.policy_loss,
    w.log_ratio_mean,
    m."timing/step" AS step_seconds,
    w.generation_wait_seconds
FROM metric_rows AS m
JOIN steps AS s ON s.run = m.run AND s.step = m.step
LEFT JOIN wide AS w ON w.run = m.run AND w.row_no = m.row_no
LEFT JOIN choice AS c ON c.run = m.run
ORDER BY m.run, m.step, m.row_no
