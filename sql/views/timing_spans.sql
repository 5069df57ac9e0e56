-- name: timing_spans
-- version: 1
-- description: The trainer's declared timing spans: span, its declared parent (a span's seconds include its
--   children) and region (`step` inside a training step, `outside` between steps). From the SkyRL fully async
--   trainer.
-- grain: span
-- column: span: a timing span the trainer declares
-- column: parent: its declared parent span (NULL for a root)
-- column: region: `step` inside a training step, `outside` between steps
SELECT * FROM (
    VALUES
        ('step', NULL, 'step'),
        ('wait_for_generation_buffer', 'step', 'step'),
        ('convert_to_training_input', 'step', 'step'),
        ('run_training', 'step', 'step'),
        ('sync_weights', 'step', 'step'),
        ('generate', 'step', 'step'),
        ('postprocess_generator_output', 'step', 'step'),
        ('fwd_logprobs_values_reward', 'run_training', 'step'),
        ('apply_reward_kl_penalty', 'run_training', 'step'),
        ('compute_advantages_and_returns', 'run_training', 'step'),
        ('train_critic_and_policy', 'run_training', 'step'),
        ('policy_train', 'train_critic_and_policy', 'step'),
        ('critic_train', 'train_critic_and_policy', 'step'),
        ('policy_critic_overlap_train', 'train_critic_and_policy', 'step'),
        ('save_checkpoints', NULL, 'outside'),
        ('cleanup_old_checkpoints', 'save_checkpoints', 'outside'),
        ('save_hf_model', NULL, 'outside'),
        ('eval', NULL, 'outside'),
        ('update_ref_with_policy', NULL, 'outside'),
        ('init_weight_sync_state', NULL, 'outside')
) AS t(span, parent, region)
