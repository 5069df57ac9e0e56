-- name: run_table_map
-- version: 1
-- description: The cross-run table with a fixed set of columns: one row per run with run_summary's headline figures
--   and `config`, a MAP from rl_config.yaml key (dotted path) to the run's value (text, `null` for a YAML null,
--   NULL where the run has no such key or no config). The keys are those whose values differ between the runs
--   (config_diff), or the `keys` parameter's (a variable, so it can change after the view exists). The named
--   query run_table gives the same table with one column per key instead of the MAP.
-- param: keys VARCHAR = NULL: comma-separated config keys to show (default: the keys that differ between the
--   runs)
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps (default: the run's
--   trainer.hf_save_interval, else 20)
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
-- column: config: MAP from dotted rl_config.yaml key to this run's value as text (the differing keys, or -p
--   keys)
WITH
    chosen AS (
        SELECT DISTINCT trim(k) AS key
        FROM (SELECT unnest(string_split({{ param('keys') }}, ',')) AS k)
        WHERE trim(k) <> ''
        UNION
        SELECT DISTINCT key FROM config_diff WHERE {{ param('keys') }} IS NULL
    ),
    first_values AS (
        SELECT run, key, arg_min(coalesce(value, 'null'), ordinal) AS value
        FROM config
        GROUP BY run, key
    ),
    -- the grid is built over `runs` (run_summary's rows are runs' rows): naming run_summary twice made
    -- DuckDB compute it twice, two thirds of this view's time
    grid AS (
        SELECT s.run, k.key, v.value
        FROM runs AS s
        CROSS JOIN chosen AS k
        LEFT JOIN first_values AS v ON v.run = s.run AND v.key = k.key
    ),
    maps AS (
        SELECT run, map_from_entries(list({'key': key, 'value': value} ORDER BY key)) AS config
        FROM grid
        GROUP BY run
    )
SELECT s.*, coalesce(m.config, MAP {}::MAP(VARCHAR, VARCHAR)) AS config
FROM run_summary AS s
LEFT JOIN maps AS m ON m.run = s.run
ORDER BY s.run
