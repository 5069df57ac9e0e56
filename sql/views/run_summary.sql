-- name: run_summary
-- version: 1
-- description: One row per run with the headline figures a reader wants first: the figures of compare_runs (steps, trials, success_rate, mean_reward, final_ema, best_ema, best_ema_step, mean_step_time_s, timeout_rate, context_length_rate; rates 0-1 of all trials), trials_with_reward, the best checkpoint's step and EMA (best_checkpoint: an eligible step), training_time_s (timing/step summed over every metric row: a re-run step took its time twice), mean_staleness (async_health), and the slowest direct child of step by mean seconds (timing_breakdown; unattributed time excluded, ties by name) with its mean seconds and mean share of the step.
-- grain: run
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
