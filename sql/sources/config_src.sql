-- name: config_src
-- version: 2
-- description: Each run's rl_config.yaml flattened to one row per leaf: run, ordinal (document order), key (dotted path), value (text), value_json (the YAML value as JSON; lists stay whole).
-- artifact: config
-- optional: true
{#- pyyaml parses the file (DuckDB has no YAML reader); each run's leaves arrive here as one escaped
    JSON literal of three parallel lists (keys, text values, JSON values), unnested by DuckDB. One
    literal per run instead of one VALUES row per leaf: over 1,000 runs (40,000 leaves) binding the
    VALUES list took ~1.4 s each time a view over it was created, the literals ~0.05 s. -#}
{%- if config_function or config_docs %}
SELECT
    run,
    CAST(generate_subscripts(doc.keys, 1) AS INTEGER) AS ordinal,
    unnest(doc.keys) AS key,
    unnest(doc.texts) AS value,
    unnest(doc.jsons) AS value_json
FROM (
    SELECT run, from_json(doc, '{"keys": ["VARCHAR"], "texts": ["VARCHAR"], "jsons": ["VARCHAR"]}') AS doc
    FROM (
    {%- if config_function %}
        {#- rlsql.connect(): the same (run, doc) pairs from a Python function of the connection that
            parses the YAML files when a query first reads the config, not when it connects #}
        SELECT d.run, d.doc FROM (SELECT unnest({{ config_function | ident }}()) AS d)
    {%- else %}
    {%- for d in config_docs %}
        {{ "VALUES" if loop.first else "," }} ({{ d.run | lit }}, {{ d.doc | lit }})
    {%- endfor %}
    {%- endif %}
    ) AS t(run, doc)
) AS t
{%- else %}
SELECT * FROM (SELECT NULL::VARCHAR, NULL::INTEGER, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR WHERE false)
    AS t(run, ordinal, key, value, value_json)
{%- endif %}
