-- name: compare_runs
-- version: 1
-- description: One row per run with its headline figures side by side: deduplicated steps, trials, success
--   rate and mean reward (over trials with a reward), the EMA of reward/avg_raw_reward at the last step and
--   at its best step (ties to the earliest), the mean timing/step over deduplicated steps, the shares of all
--   trials ending in AgentTimeoutError and ContextLengthExceededError, and the rl_config.yaml keys whose
--   values differ between the runs (`key=value` pairs sorted by key, joined by a semicolon and a space).
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- grain: run
-- column: run: the run: its folder's name
-- column: steps: deduplicated training steps
-- column: trials: trials in the run
-- column: success_rate: share (0-1) of trials with a reward whose reward > 0
-- column: mean_reward: mean reward over trials with a reward
-- column: final_ema: the EMA of the last deduplicated step
-- column: best_ema: the highest EMA over the steps
-- column: best_ema_step: the step of best_ema (ties to the earliest)
-- column: mean_step_time_s: mean of timing/step over deduplicated steps, seconds
-- column: timeout_rate: share (0-1) of trials that ended in AgentTimeoutError
-- column: context_length_rate: share (0-1) of trials that ended in ContextLengthExceededError
-- column: differing_config: config keys whose values differ between the runs given, key=value sorted by key,
--   joined with a semicolon and a space
WITH
    step_figures AS (
        SELECT run, count(*) AS steps, avg("timing/step") AS mean_step_time_s
        FROM steps
        GROUP BY run
    ),
    ema_figures AS (
        -- reward_curve gives every deduplicated step its EMA (NULL where the step has no reward)
        SELECT
            run,
            arg_max(ema, step) AS final_ema,
            max(ema) AS best_ema,
            -- the step ranked first by EMA, ties to the earliest (a window rank: no ordered first())
            min(step) FILTER (WHERE ema_rank = 1) AS best_ema_step
        FROM (
            SELECT run, step, ema, row_number() OVER (PARTITION BY run ORDER BY ema DESC, step) AS ema_rank
            FROM reward_curve
            WHERE ema IS NOT NULL
        ) AS ranked
        GROUP BY run
    ),
    exception_figures AS (
        SELECT
            run,
            avg(CASE WHEN exception_type = 'AgentTimeoutError' THEN 1.0 ELSE 0.0 END) AS timeout_rate,
            avg(CASE WHEN exception_type = 'ContextLengthExceededError' THEN 1.0 ELSE 0.0 END) AS context_length_rate
        FROM trial_rows
        GROUP BY run
    ),
    config_figures AS (
        -- config_diff lists, for every run with a config, each key that differs (a key a run lacks
        -- differs too; its value is NULL there)
        SELECT
            c.run,
            coalesce(
                string_agg(d.key || '=' || coalesce(d.value, '<missing>'), '; ' ORDER BY d.key),
                ''
            ) AS differing_config
        FROM (SELECT DISTINCT run FROM run_files WHERE artifact = 'config') AS c
        LEFT JOIN config_diff AS d ON d.run = c.run
        GROUP BY c.run
    )
SELECT
    r.run,
    s.steps,
    rs.trials,
    rs.success_rate,
    rs.mean_reward,
    e.final_ema,
    e.best_ema,
    e.best_ema_step,
    s.mean_step_time_s,
    x.timeout_rate,
    x.context_length_rate,
    c.differing_config
FROM runs AS r
LEFT JOIN step_figures AS s ON s.run = r.run
LEFT JOIN reward_summary AS rs ON rs.run = r.run
LEFT JOIN ema_figures AS e ON e.run = r.run
LEFT JOIN exception_figures AS x ON x.run = r.run
LEFT JOIN config_figures AS c ON c.run = r.run
ORDER BY r.run
