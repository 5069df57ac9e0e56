-- name: vllm_series
-- version: 1
-- description: The vLLM engine series the report draws, per run and log over real time: at most 2,000 points
--   per log, each the mean of the seconds in its slice of time (a log with fewer seconds keeps every second):
--   run, log_file, ts (the slice's first second), seconds (in the slice), generation throughput, running and
--   waiting requests per engine, prefix-cache hit rate.
-- grain: run, log_file, ts
-- column: run: the run: its folder's name
-- column: log_file: the vLLM engine log
-- column: ts: the first second of the time slice
-- column: seconds: seconds with a stat line in the slice
-- column: avg_generation_throughput_per_engine: mean generated tokens per second per engine over the slice
-- column: avg_running_requests_per_engine: mean running requests per engine over the slice
-- column: avg_waiting_requests_per_engine: mean waiting requests per engine over the slice
-- column: avg_prefix_cache_hit_rate_pct: mean prefix-cache hit rate over the slice, percent (0-100)
WITH sliced AS (
    SELECT
        run,
        log_file,
        ts,
        avg_generation_throughput_per_engine,
        avg_running_requests_per_engine,
        avg_waiting_requests_per_engine,
        avg_prefix_cache_hit_rate_pct,
        ntile(2000) OVER (PARTITION BY run, log_file ORDER BY ts) AS slice
    FROM vllm_seconds
    WHERE ts IS NOT NULL
)
SELECT
    run,
    log_file,
    min(ts) AS ts,
    count(*) AS seconds,
    avg(avg_generation_throughput_per_engine) AS avg_generation_throughput_per_engine,
    avg(avg_running_requests_per_engine) AS avg_running_requests_per_engine,
    avg(avg_waiting_requests_per_engine) AS avg_waiting_requests_per_engine,
    avg(avg_prefix_cache_hit_rate_pct) AS avg_prefix_cache_hit_rate_pct
FROM sliced
GROUP BY run, log_file, slice
ORDER BY run, log_file, ts
