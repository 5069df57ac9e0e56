-- name: log_summary
-- version: 1
-- description: The cross-log comparison: one row per run and log_file with the log's metric rows, first and
--   last step, and the means over its rows of reward/avg_raw_reward (mean_reward), the run's pass@k column
--   (mean_pass_at_k, with its k), timing/step (mean_step_s), timing/wait_for_generation_buffer
--   (mean_generation_wait_s), generate/avg_num_tokens (mean_tokens) and async/staleness_mean
--   (mean_staleness). Every row counts (a re-run step counts in each log that ran it).
-- grain: run, log_file
-- column: run: the run: its folder's name
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: rows: metric rows in the log
-- column: first_step: the log's lowest step
-- column: last_step: the log's highest step
-- column: mean_reward: mean of reward/avg_raw_reward over the log's rows
-- column: mean_pass_at_k: mean of the run's reward/avg_pass_at_<k> over the log's rows
-- column: k: the k of mean_pass_at_k
-- column: mean_step_s: mean of timing/step over the log's rows, seconds
-- column: mean_generation_wait_s: mean of timing/wait_for_generation_buffer over the log's rows, seconds
-- column: mean_tokens: mean of generate/avg_num_tokens over the log's rows
-- column: mean_staleness: mean of async/staleness_mean over the log's rows
WITH
    pass_columns AS (
        -- as reward_curve: the run's pass@k column (the lowest k should it log several)
        SELECT run, metric, CAST(regexp_extract(metric, '^reward/avg_pass_at_([0-9]+)$', 1) AS INTEGER) AS k
        FROM metrics_long
        WHERE regexp_full_match(metric, 'reward/avg_pass_at_[0-9]+')
        GROUP BY run, metric
        QUALIFY row_number() OVER (PARTITION BY run ORDER BY k) = 1
    ),
    picked AS (
        SELECT
            l.run,
            l.log_file,
            avg(l.value) FILTER (WHERE l.metric = p.metric) AS mean_pass_at_k,
            avg(l.value) FILTER (WHERE l.metric = 'timing/wait_for_generation_buffer') AS mean_generation_wait_s,
            avg(l.value) FILTER (WHERE l.metric = 'generate/avg_num_tokens') AS mean_tokens,
            avg(l.value) FILTER (WHERE l.metric = 'async/staleness_mean') AS mean_staleness
        FROM metrics_long AS l
        LEFT JOIN pass_columns AS p ON p.run = l.run
        WHERE l.metric IN ('timing/wait_for_generation_buffer', 'generate/avg_num_tokens', 'async/staleness_mean')
            OR l.metric = p.metric
        GROUP BY l.run, l.log_file
    ),
    per_log AS (
        SELECT
            run,
            log_file,
            count(*) AS rows,
            min(step) AS first_step,
            max(step) AS last_step,
            avg("reward/avg_raw_reward") AS mean_reward,
            avg("timing/step") AS mean_step_s
        FROM metric_rows
        GROUP BY run, log_file
    )
SELECT
    g.run,
    g.log_file,
    g.rows,
    g.first_step,
    g.last_step,
    g.mean_reward,
    x.mean_pass_at_k,
    p.k,
    g.mean_step_s,
    x.mean_generation_wait_s,
    x.mean_tokens,
    x.mean_staleness
FROM per_log AS g
LEFT JOIN picked AS x ON x.run = g.run AND x.log_file IS NOT DISTINCT FROM g.log_file
LEFT JOIN pass_columns AS p ON p.run = g.run
ORDER BY g.run, g.log_file
