-- name: vllm_src
-- version: 2
-- description: Raw rows of each run's vLLM engine stats CSV (`*_vllm_metrics_table.csv` / `vllm_metrics.csv`), one per (log_file, second), read in place. A run without the CSV gives the same rows from the vLLM stat lines of its raw training logs (source_file = the log).
-- artifact: vllm
-- columns: log_file VARCHAR, datetime_str VARCHAR, n_engines_reporting DOUBLE, unique_ips DOUBLE, total_prompt_throughput_tokens_per_sec DOUBLE, total_generation_throughput_tokens_per_sec DOUBLE, total_running_requests DOUBLE, total_waiting_requests DOUBLE, avg_prompt_throughput_per_engine DOUBLE, avg_generation_throughput_per_engine DOUBLE, avg_running_requests_per_engine DOUBLE, avg_waiting_requests_per_engine DOUBLE, avg_gpu_kv_cache_usage_pct DOUBLE, avg_prefix_cache_hit_rate_pct DOUBLE, min_running_requests DOUBLE, max_running_requests DOUBLE, min_generation_throughput DOUBLE, max_generation_throughput DOUBLE
-- other_columns: DOUBLE
{% include "sources/_read_csv.sql.j2" %}

{% include "sources/_vllm_log.sql.j2" %}
