-- name: vllm_seconds
-- version: 2
-- description: One row per (run, log_file, second) of vLLM engine stats with a real timestamp `ts`: the year
--   comes from the file's parse date, and a month-day more than one day after that date belongs to the year
--   before (a run parsed in January that ran in December). Order by ts, never by datetime_str.
-- grain: run, log_file, ts
-- column: run: the run: its folder's name
-- column: log_file: the vLLM engine log the second came from
-- column: row_no: the row's position in the run's vLLM CSV (1 = first data row)
-- column: datetime_str: the second as logged, `MM-DD HH:MM:SS`, without a year (never order by it)
-- column: ts: the second as a TIMESTAMP: year from the file's parse date, a month-day more than one day after
--   it is the year before
-- column: n_engines_reporting: engines that printed a stat line in this second
-- column: unique_ips: distinct nodes among them
-- column: total_prompt_throughput_tokens_per_sec: prompt tokens per second summed over the engines reporting
--   (not a cluster total)
-- column: total_generation_throughput_tokens_per_sec: generated tokens per second summed over the engines
--   reporting (not a cluster total)
-- column: total_running_requests: running requests summed over the engines reporting
-- column: total_waiting_requests: waiting (queued) requests summed over the engines reporting
-- column: avg_prompt_throughput_per_engine: prompt tokens per second per engine
-- column: avg_generation_throughput_per_engine: generated tokens per second per engine
-- column: avg_running_requests_per_engine: running requests per engine
-- column: avg_waiting_requests_per_engine: waiting requests per engine
-- column: avg_gpu_kv_cache_usage_pct: GPU KV-cache usage, percent (0-100), mean over the engines
-- column: avg_prefix_cache_hit_rate_pct: prefix-cache hit rate, percent (0-100), mean over the engines
-- column: min_running_requests: fewest running requests on one engine
-- column: max_running_requests: most running requests on one engine
-- column: min_generation_throughput: lowest generation throughput of one engine, tokens per second
-- column: max_generation_throughput: highest generation throughput of one engine, tokens per second
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
    -- counts are whole numbers: BIGINT, though pandas may have written them as `3.0`
    CAST(n_engines_reporting AS BIGINT) AS n_engines_reporting,
    CAST(unique_ips AS BIGINT) AS unique_ips,
    total_prompt_throughput_tokens_per_sec,
    total_generation_throughput_tokens_per_sec,
    CAST(total_running_requests AS BIGINT) AS total_running_requests,
    CAST(total_waiting_requests AS BIGINT) AS total_waiting_requests,
    avg_prompt_throughput_per_engine,
    avg_generation_throughput_per_engine,
    avg_running_requests_per_engine,
    avg_waiting_requests_per_engine,
    avg_gpu_kv_cache_usage_pct,
    avg_prefix_cache_hit_rate_pct,
    CAST(min_running_requests AS BIGINT) AS min_running_requests,
    CAST(max_running_requests AS BIGINT) AS max_running_requests,
    min_generation_throughput,
    max_generation_throughput
FROM stamped
