-- name: run_table
-- version: 3
-- description: The cross-run table: one row per run with run_summary's headline figures, then one column per
--   rl_config.yaml key (dotted path) whose value differs between the runs (config_diff), or per key of the
--   `keys` parameter, sorted by key: the run's value, typed BIGINT, DOUBLE or BOOLEAN when every run's value
--   is one, else text (version 3, where version 2 gave text only). The config columns depend on the runs: rlsql
--   works them out from the configs when it creates the query (`keys` is read then, not at each query), so
--   a BI tool or notebook can plot success_rate against trainer.policy.optimizer_config.lr directly. The same
--   table with the keys in one MAP column: the view run_table_map.
-- optional: true
-- param: keys VARCHAR = NULL: comma-separated config keys to give a column each (default: the keys that
--   differ between the runs)
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
-- column: *: a chosen config key (`config.KEY` if a column before has that name): the run's value, typed
--   BIGINT, DOUBLE or BOOLEAN when every run's is one, else text, NULL where the run lacks the key
{#- config_columns (rlsql/engine/sources.py SourceContext.config_columns): [{key, column, type}] in key order,
    worked out in Python from the runs' parsed configs (the keys config_diff finds, or the `keys` parameter's),
    since a view's columns cannot depend on the data (DuckDB refuses a PIVOT without IN list in a view). The
    values come from the config view here, as config_diff's do: the first value of a key in document order.
    A typed column's every text is one that casts exactly (rlsql/runs/config.py value_type), so CAST, not
    TRY_CAST (which reads '3e-06' as the BIGINT 0). -#}
WITH
    first_values AS (
        SELECT run, key, arg_min(coalesce(value, 'null'), ordinal) AS value
        FROM config
        {%- if config_columns %}
        WHERE key IN ({% for c in config_columns %}{{ ", " if not loop.first }}{{ c.key | lit }}{% endfor %})
        {%- else %}
        WHERE false
        {%- endif %}
        GROUP BY run, key
    ),
    wide AS (
        SELECT
            run
            {%- for c in config_columns %},
            {%- if c.type == "VARCHAR" %}
            max(value) FILTER (WHERE key = {{ c.key | lit }}) AS {{ c.column | ident }}
            {%- else %}
            CAST(nullif(max(value) FILTER (WHERE key = {{ c.key | lit }}), 'null') AS {{ c.type | sqltype }})
                AS {{ c.column | ident }}
            {%- endif %}
            {%- endfor %}
        FROM first_values
        GROUP BY run
    )
SELECT
    s.*
    {%- for c in config_columns %},
    w.{{ c.column | ident }}
    {%- endfor %}
FROM run_summary AS s
LEFT JOIN wide AS w ON w.run = s.run
ORDER BY s.run
