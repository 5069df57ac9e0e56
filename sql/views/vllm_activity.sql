-- name: vllm_activity
-- version: 1
-- description: How busy each vLLM log's engines were, counted in stat lines (the parser's one row per second with a
--   stat line): lines with no running request (idle), with KV-cache usage at or above `kv_full_pct` percent, and
--   with requests waiting. What the findings idle_engines, kv_cache_pressure and waiting_requests read, shares are
--   0-1.
-- param: kv_full_pct DOUBLE = 95, min 0: KV-cache usage, percent (0-100), from which a stat line counts as full
-- grain: run, log_file
-- column: run: the run: its folder's name
-- column: log_file: the vLLM engine log
-- column: stat_lines: stat lines (seconds with one) in the log
-- column: idle_lines: stat lines with no running request (total_running_requests = 0)
-- column: idle_share: idle_lines / stat_lines (0-1)
-- column: kv_full_lines: stat lines with avg_gpu_kv_cache_usage_pct >= kv_full_pct
-- column: kv_full_share: kv_full_lines / stat_lines (0-1)
-- column: waiting_lines: stat lines with requests waiting (total_waiting_requests > 0)
-- column: waiting_share: waiting_lines / stat_lines (0-1)
WITH counted AS (
    SELECT
        run,
        log_file,
        count(*) AS stat_lines,
        count(*) FILTER (WHERE total_running_requests = 0) AS idle_lines,
        count(*) FILTER (WHERE avg_gpu_kv_cache_usage_pct >= {{ param('kv_full_pct') }}) AS kv_full_lines,
        count(*) FILTER (WHERE total_waiting_requests > 0) AS waiting_lines
    FROM vllm_seconds
    GROUP BY run, log_file
)
SELECT
    run,
    log_file,
    stat_lines,
    idle_lines,
    idle_lines / stat_lines AS idle_share,
    kv_full_lines,
    kv_full_lines / stat_lines AS kv_full_share,
    waiting_lines,
    waiting_lines / stat_lines AS waiting_share
FROM counted
ORDER BY run, log_file
