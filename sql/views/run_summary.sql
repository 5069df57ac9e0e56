-- name: run_summary
-- version: 1
-- description: One row per run with the headline figures a reader wants first: the figures of compare_runs
--   (steps, trials, success_rate, mean_reward, final_ema, best_ema, best_ema_step, mean_step_time_s,
--   timeout_rate, context_length_rate, rates 0-1 of all trials), trials_with_reward, the best checkpoint's
--   step and EMA (best_checkpoint: an eligible step), training_time_s (timing/step summed over every metric
--   row: a re-run step took its time twice), mean_staleness (async_health), and the slowest direct child of
--   step by mean seconds (timing_breakdown, unattributed time excluded, ties by name) with its mean seconds
--   and mean share of the step.
-- optional: true
-- grain: run
-- column: run: the run: its folder's name
-- column: steps: deduplicated training steps
-- column: trials: trials in the run
-- column: trials_with_reward: trials with a reward
-- column: success_rate: share (0-1) of trials with a reward whose reward > 0
-- column: mean_reward: mean reward over trials with a reward
-- column: final_ema: the EMA of the last deduplicated step
-- column: best_ema: the highest EMA over the steps
-- column: best_ema_step: the step of best_ema (ties to the earliest)
-- column: best_checkpoint_step: the step best_checkpoint selects (an eligible step), NULL when none is
--   eligible
-- column: best_checkpoint_ema: the EMA at best_checkpoint_step
-- column: mean_step_time_s: mean of timing/step over deduplicated steps, seconds
-- column: training_time_s: timing/step summed over every metric row, seconds (a re-run step counts twice)
-- column: timeout_rate: share (0-1) of all trials that ended in AgentTimeoutError
-- column: context_length_rate: share (0-1) of all trials that ended in ContextLengthExceededError
-- column: mean_staleness: mean of async/staleness_mean over every metric row (async_health)
-- column: slowest_span: the direct child of step with the highest mean seconds (unattributed left out, ties
--   by name)
-- column: slowest_span_mean_s: its mean seconds over the rows where it ran
-- column: slowest_span_share: its mean share of the step (0-1)
WITH
    time_figures AS (
        SELECT run, sum("timing/step") AS training_time_s
        FROM metric_rows
        GROUP BY run
    ),
    slowest AS (
        SELECT
            run,
            arg_max(span, [mean_seconds, -rank]) AS slowest_span,
            max(mean_seconds) AS slowest_span_mean_s,
            arg_max(share_of_within, [mean_seconds, -rank]) AS slowest_span_share
        FROM (
            SELECT *, dense_rank() OVER (PARTITION BY run ORDER BY span) AS rank
            FROM timing_breakdown
            WHERE within = 'step' AND span NOT IN ('unattributed', 'overlap')
        )
        GROUP BY run
    )
SELECT
    c.run,
    c.steps,
    c.trials,
    rs.trials_with_reward,
    c.success_rate,
    c.mean_reward,
    c.final_ema,
    c.best_ema,
    c.best_ema_step,
    b.step AS best_checkpoint_step,
    b.ema AS best_checkpoint_ema,
    c.mean_step_time_s,
    t.training_time_s,
    c.timeout_rate,
    c.context_length_rate,
    a.mean_staleness,
    s.slowest_span,
    s.slowest_span_mean_s,
    s.slowest_span_share
FROM compare_runs AS c
LEFT JOIN reward_summary AS rs ON rs.run = c.run
LEFT JOIN best_checkpoint AS b ON b.run = c.run
LEFT JOIN time_figures AS t ON t.run = c.run
LEFT JOIN async_health AS a ON a.run = c.run
LEFT JOIN slowest AS s ON s.run = c.run
ORDER BY c.run
