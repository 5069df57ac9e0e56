-- name: runs
-- version: 1
-- description: One row per run folder given to rlsql: its id (the folder name), its absolute path and the date its vLLM `MM-DD` stamps are read against.
{#- Rendered from the runs rlsql found; every value is an escaped, typed literal. #}
SELECT * FROM (
{%- for run in runs %}
    {{ "VALUES" if loop.first else "," }} ({{ run.name | lit }}, {{ run.path | lit }}, {{ run.vllm_base_date | lit_date }})
{%- endfor %}
) AS t(run, run_path, vllm_base_date)
