-- name: config_src
-- version: 1
-- description: Each run's rl_config.yaml flattened to one row per leaf: run, ordinal (document order), key (dotted path), value (text), value_json (the YAML value as JSON; lists stay whole).
-- artifact: config
-- optional: true
{#- pyyaml parses the file (DuckDB has no YAML reader); the leaves arrive here as escaped literals. #}
SELECT * FROM (
{%- for row in config_rows %}
    {{ "VALUES" if loop.first else "," }} ({{ row.run | lit }}, {{ row.ordinal }}, {{ row.key | lit }}, {{ row.value | lit }}, {{ row.value_json | lit }})
{%- else %}
    SELECT NULL::VARCHAR, NULL::INTEGER, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR WHERE false
{%- endfor %}
) AS t(run, ordinal, key, value, value_json)
