-- name: vllm_seconds
-- version: 1
-- description: One row per (run, log_file, second) of vLLM engine stats with a real timestamp `ts`: the year comes from the file's parse date, and a month-day more than one day after that date belongs to the year before (a run parsed in January that ran in December). Order by ts, never by datetime_str.
-- grain: run, log_file, ts
WITH stamped AS (
    SELECT
        v.*,
        r.vllm_base_date AS base_date,
        try_strptime(CAST(year(r.vllm_base_date) AS VARCHAR) || '-' || v.datetime_str, '%Y-%m-%d %H:%M:%S')
            AS same_year_ts
    FROM vllm_src AS v
    JOIN runs AS r ON r.run = v.run
)
SELECT
    run,
    log_file,
    row_no,
    datetime_str,
    CASE
        WHEN CAST(same_year_ts AS DATE) > base_date + 1
            THEN try_strptime(CAST(year(base_date) - 1 AS VARCHAR) || '-' || datetime_str, '%Y-%m-%d %H:%M:%S')
        ELSE same_year_ts
    END AS ts,
    n_engines_reporting,
    unique_ips,
    total_prompt_throughput_tokens_per_sec,
    total_generation_throughput_tokens_per_sec,
    total_running_requests,
    total_waiting_requests,
    avg_prompt_throughput_per_engine,
    avg_generation_throughput_per_engine,
    avg_running_requests_per_engine,
    avg_waiting_requests_per_engine,
    avg_gpu_kv_cache_usage_pct,
    avg_prefix_cache_hit_rate_pct,
    min_running_requests,
    max_running_requests,
    min_generation_throughput,
    max_generation_throughput
FROM stamped
