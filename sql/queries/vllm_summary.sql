-- name: vllm_summary
-- version: 2
-- description: vLLM engine stats per run and log: seconds with a stat line, means per engine, max totals,
--   KV-cache and prefix-cache percents (0-100), and a utilisation verdict (underutilized: nothing waits and <
--   5 running per engine, well-utilized: requests wait, low throughput: < 300 tok/s per engine, else
--   moderate). Version 2 adds stat_lines after the v1 columns: the same count as `seconds`, under an honest
--   name (the parser writes one row per second with a stat line, and engines print one every 4-9 s, so it
--   is not the log's duration).
-- grain: run, log_file
-- column: run: the run: its folder's name
-- column: log_file: the vLLM engine log
-- column: seconds: stat lines (seconds with one) in the log, v1 name: not wall-clock seconds
-- column: mean_engines_reporting: mean engines reporting per stat line
-- column: mean_running_per_engine: mean of avg_running_requests_per_engine
-- column: max_total_running: max of total_running_requests
-- column: mean_total_waiting: mean of total_waiting_requests
-- column: max_total_waiting: max of total_waiting_requests
-- column: mean_generation_tps_per_engine: mean generated tokens per second per engine
-- column: max_total_generation_tps: max of total generation throughput, tokens per second
-- column: mean_kv_cache_pct: mean GPU KV-cache usage, percent (0-100)
-- column: mean_prefix_cache_hit_pct: mean prefix-cache hit rate, percent (0-100)
-- column: utilization: underutilized, well-utilized, low throughput or moderate (rule in the description)
-- column: stat_lines: rows (seconds with a stat line) in the log (v2, what seconds holds)
WITH per_log AS (
    SELECT
        run,
        log_file,
        count(*) AS seconds,
        count(*) AS stat_lines,
        avg(n_engines_reporting) AS mean_engines_reporting,
        avg(avg_running_requests_per_engine) AS mean_running_per_engine,
        max(total_running_requests) AS max_total_running,
        avg(total_waiting_requests) AS mean_total_waiting,
        max(total_waiting_requests) AS max_total_waiting,
        avg(avg_generation_throughput_per_engine) AS mean_generation_tps_per_engine,
        max(total_generation_throughput_tokens_per_sec) AS max_total_generation_tps,
        avg(avg_gpu_kv_cache_usage_pct) AS mean_kv_cache_pct,
        avg(avg_prefix_cache_hit_rate_pct) AS mean_prefix_cache_hit_pct
    FROM vllm_seconds
    GROUP BY run, log_file
)
SELECT
    * EXCLUDE (stat_lines),
    CASE
        WHEN mean_total_waiting = 0 AND mean_running_per_engine < 5 THEN 'underutilized'
        WHEN mean_total_waiting > 0 THEN 'well-utilized'
        WHEN mean_generation_tps_per_engine < 300 THEN 'low throughput'
        ELSE 'moderate'
    END AS utilization,
    stat_lines
FROM per_log
ORDER BY run, log_file
