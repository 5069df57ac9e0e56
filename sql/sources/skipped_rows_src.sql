-- name: skipped_rows_src
-- version: 1
-- description: The CSV rows and files rlsql skips in the runs' trainer metrics, trials and vLLM CSVs, counted as `rlsql check` counts them (a row with a cell DuckDB cannot read in any column, or a wrong number of fields): one row per file with any: run, artifact (metrics, trials, vllm), source_file, rows (the rows skipped; NULL: the whole file was skipped), rows_read (the rows read from it), why (why a whole file was skipped; the lines skipped and why: `rlsql check`). Worked out when its objects are made (each answer of `rlsql query`; a connection or database file when it is made): every cell of each CSV read in place is read once before, so that its skipped rows are known before a query reads it.
{#- Rendered from what rlsql/engine/sources.py recorded (SourceContext.skipped_rows); every value is an escaped,
    typed literal. -#}
SELECT * FROM (
{%- for s in skipped %}
    {{ "VALUES" if loop.first else "," }} ({{ s.run | lit }}, {{ s.artifact | lit }}, {{ s.path | lit }}, {{ s.rows | lit }}::BIGINT, {{ s.read | lit }}::BIGINT, {{ s.why | lit }})
{%- else %}
    SELECT NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::BIGINT, NULL::BIGINT, NULL::VARCHAR WHERE false
{%- endfor %}
) AS t(run, artifact, source_file, rows, rows_read, why)
