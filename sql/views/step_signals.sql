-- name: step_signals
-- version: 1
-- description: Per run and deduplicated step (first-seen row), the signals a reader scans for trouble:
--   entropy (policy/policy_entropy), grad_norm (policy/raw_grad_norm), log_ratio_mean
--   (policy/log_ratio_abs_mean), and the batch errors per rollout batch, timeouts_per_batch
--   (batch_errors/avg_AgentTimeoutError) and context_length_per_batch
--   (batch_errors/avg_ContextLengthExceededError), NULL where not logged.
-- grain: run, step
-- column: run: the run: its folder's name
-- column: step: a deduplicated training step (first-seen row)
-- column: entropy: policy/policy_entropy
-- column: grad_norm: policy/raw_grad_norm
-- column: log_ratio_mean: policy/log_ratio_abs_mean
-- column: timeouts_per_batch: batch_errors/avg_AgentTimeoutError: timeouts per rollout batch
-- column: context_length_per_batch: batch_errors/avg_ContextLengthExceededError: context-length failures per
--   rollout batch
SELECT
    s.run,
    s.step,
    max(l.value) FILTER (WHERE l.metric = 'policy/policy_entropy') AS entropy,
    max(l.value) FILTER (WHERE l.metric = 'policy/raw_grad_norm') AS grad_norm,
    max(l.value) FILTER (WHERE l.metric = 'policy/log_ratio_abs_mean') AS log_ratio_mean,
    max(l.value) FILTER (WHERE l.metric = 'batch_errors/avg_AgentTimeoutError') AS timeouts_per_batch,
    max(l.value) FILTER (WHERE l.metric = 'batch_errors/avg_ContextLengthExceededError') AS context_length_per_batch
FROM steps AS s
LEFT JOIN metrics_long AS l ON l.run = s.run AND l.row_no = s.row_no
GROUP BY s.run, s.step
ORDER BY s.run, s.step
