-- name: run_files
-- version: 1
-- description: The artifact files rlsql reads for each run (newest parse only): run, artifact (metrics, trials, vllm, config), absolute path, the file name's timestamp prefix.
SELECT * FROM (
{%- for f in run_files %}
    {{ "VALUES" if loop.first else "," }} ({{ f.run | lit }}, {{ f.kind | lit }}, {{ f.path | lit }}, {{ f.prefix | lit }})
{%- else %}
    SELECT NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR WHERE false
{%- endfor %}
) AS t(run, artifact, path, prefix)
