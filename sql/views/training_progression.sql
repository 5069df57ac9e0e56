-- name: training_progression
-- version: 1
-- description: One row per run and deduplicated step (first-seen row): reward/avg_raw_reward, pass@k and its
--   k (as reward_curve), kl_or_entropy (policy/policy_kl, or policy/policy_entropy for a run that never logs
--   a KL) with the metric it came from, loss (the first of loss/final_loss, policy/final_loss,
--   policy/policy_loss the run logs) with its metric, step_seconds (timing/step) and generation_wait_seconds
--   (timing/wait_for_generation_buffer).
-- grain: run, step
-- column: run: the run: its folder's name
-- column: step: a deduplicated training step (first-seen row)
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: reward: reward/avg_raw_reward
-- column: pass_at_k: reward/avg_pass_at_<k> of the run
-- column: k: the k of pass_at_k (n_samples_per_prompt)
-- column: kl_or_entropy: policy/policy_kl, or policy/policy_entropy for a run that never logs a KL
-- column: kl_or_entropy_metric: which of the two metrics kl_or_entropy holds
-- column: loss: the first of loss/final_loss, policy/final_loss, policy/policy_loss the run logs
-- column: loss_metric: which metric loss holds
-- column: step_seconds: timing/step: the step's seconds
-- column: generation_wait_seconds: timing/wait_for_generation_buffer: seconds waiting for rollouts
WITH
    picked AS (
        -- per run: which KL-or-entropy and which loss metric it logs (first choice with any value)
        SELECT
            run,
            arg_min(metric, list_position(['policy/policy_kl', 'policy/policy_entropy'], metric))
                FILTER (WHERE metric IN ('policy/policy_kl', 'policy/policy_entropy')) AS kl_metric,
            arg_min(metric, list_position(['loss/final_loss', 'policy/final_loss', 'policy/policy_loss'], metric))
                FILTER (WHERE metric IN ('loss/final_loss', 'policy/final_loss', 'policy/policy_loss')) AS loss_metric
        FROM metrics_long
        GROUP BY run
    )
SELECT
    c.run,
    c.step,
    c.log_file,
    c.reward,
    c.pass_at_k,
    c.k,
    kl.value AS kl_or_entropy,
    p.kl_metric AS kl_or_entropy_metric,
    loss.value AS loss,
    p.loss_metric,
    s."timing/step" AS step_seconds,
    wait.value AS generation_wait_seconds
FROM reward_curve AS c
JOIN steps AS s ON s.run = c.run AND s.step = c.step
LEFT JOIN picked AS p ON p.run = c.run
LEFT JOIN metrics_long AS kl ON kl.run = s.run AND kl.row_no = s.row_no AND kl.metric = p.kl_metric
LEFT JOIN metrics_long AS loss ON loss.run = s.run AND loss.row_no = s.row_no AND loss.metric = p.loss_metric
LEFT JOIN metrics_long AS wait
    ON wait.run = s.run AND wait.row_no = s.row_no AND wait.metric = 'timing/wait_for_generation_buffer'
ORDER BY c.run, c.step
