-- name: run_ranking
-- version: 1
-- description: The cross-run table ranked, best first: run_table_map's rows with each run's rank and what it
--   is ranked by. Runs rank by final_ema (the EMA of reward at the last deduplicated step) when any run has
--   one, else by success_rate (higher is better), ties by run name. A run without that figure has no rank and
--   comes after the ranked runs, by name. The report's ranked table, its figures' highlighted runs (the first
--   and the last ranked) and its table of every run read it.
-- param: keys VARCHAR = NULL: comma-separated config keys to show (default: the keys that differ between the
--   runs)
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps (default: the run's
--   trainer.hf_save_interval, else 20)
-- grain: run
-- column: run: the run: its folder's name
-- column: rank: 1 for the best run, counting up, NULL for a run without the figure it is ranked by
-- column: ranked_by: final_ema, or success_rate when no run has a final EMA (the same in every row)
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
-- column: config: MAP from dotted rl_config.yaml key to this run's value as text (the differing keys, or -p
--   keys)
WITH
    -- one pass over run_table_map: a window counts the runs with a final EMA
    basis AS (
        SELECT *, CASE WHEN count(final_ema) OVER () > 0 THEN 'final_ema' ELSE 'success_rate' END AS ranked_by
        FROM run_table_map
    ),
    scored AS (
        SELECT *, CASE WHEN ranked_by = 'final_ema' THEN final_ema ELSE success_rate END AS score
        FROM basis
    )
SELECT
    run,
    CASE WHEN score IS NOT NULL THEN row_number() OVER (ORDER BY score DESC NULLS LAST, run) END AS rank,
    ranked_by,
    * EXCLUDE (run, ranked_by, score)
FROM scored
ORDER BY rank NULLS LAST, run
