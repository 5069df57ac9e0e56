-- name: trajectory_steps_src
-- version: 1
-- description: Every trial's agent trajectory (ATIF) read in place: one row per step of every
--   `trace_jobs/<trial>/agent/trajectory.json` (segment 0) and `trajectory.cont-N.json` (segment N), with the
--   figures the `trajectory_steps` view gives (turn, source, ts, model_name, characters, tool calls, tokens,
--   cost, copied), its position in the file (step_index), the timestamp as written and its calls' positions and
--   functions (calls: the tool_call_names view); plus one row per
--   damaged file (cut short, not JSON, not an object, no `steps` list, a step without an integer step_id, not
--   a regular file, ...) with `problem` saying why and every step column NULL: read steps with `WHERE problem
--   IS NULL` (trajectory_steps does). Token counts that are not whole numbers from 0 to 2**53 read as NULL.
-- artifact: trajectories
{%- import "sources/_atif.sql.j2" as atif %}
{#- the step fields read (sources/_trajectory_files.sql.j2): a call is only counted -#}
{%- set step_fields = '"timestamp": "JSON", "model_name": "JSON", "message": "JSON", "reasoning_content": "JSON", '
    ~ '"tool_calls": [{"function_name": "JSON"}], '
    ~ '"metrics": {"prompt_tokens": "JSON", "completion_tokens": "JSON", "cached_tokens": "JSON", "cost_usd": "JSON"}' %}
{#- a token count: a JSON number that is a whole number from 0 to 2**53, else NULL; a number outside that is a
    bad cell as the CSVs' whole-number cells are (rlsql/duck/badcells.py): in rlsql's query connections it stops the
    statement ('fail'), which runs again recording it ('record') so that a warning names it -#}
{%- macro count(field) -%}
    {%- set j = "s.metrics." ~ field %}
    {%- set number = "TRY_CAST(" ~ j ~ " AS DOUBLE)" %}
    CASE
        WHEN coalesce(json_type({{ j }}), 'NULL') NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN NULL
        WHEN {{ number }} >= 0 AND {{ number }} <= 9007199254740992 AND {{ number }} = trunc({{ number }})
            THEN CAST({{ number }} AS BIGINT)
        {%- if bad_cells | default(none) == 'record' %}
        WHEN true THEN CAST({{ BAD_CELL_FUNCTION | ident }}(source_file, step_index,
            'steps[' || (step_index - 1) || '].metrics.{{ field }}', {{ number }}) AS BIGINT)
        {%- elif bad_cells | default(none) == 'fail' %}
        WHEN true THEN CAST(error({{ BAD_CELL_MARK | lit }}) AS BIGINT)
        {%- endif %}
    END
{%- endmacro %}
{%- set copies = copies | default([]) %}
{%- if not files and not refused and not copies %}
-- no run has a trajectory: the same columns and no rows
SELECT
    CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS trial_name, CAST(NULL AS INTEGER) AS segment,
    CAST(NULL AS VARCHAR) AS source_file, CAST(NULL AS VARCHAR) AS problem, CAST(NULL AS BIGINT) AS step_index,
    CAST(NULL AS BIGINT) AS step_id, CAST(NULL AS BIGINT) AS turn, CAST(NULL AS VARCHAR) AS source,
    CAST(NULL AS VARCHAR) AS "timestamp", CAST(NULL AS TIMESTAMP) AS ts, CAST(NULL AS VARCHAR) AS model_name,
    CAST(NULL AS BIGINT) AS message_chars, CAST(NULL AS BIGINT) AS reasoning_chars, CAST(NULL AS BIGINT) AS tool_calls,
    CAST(NULL AS BIGINT) AS prompt_tokens, CAST(NULL AS BIGINT) AS completion_tokens,
    CAST(NULL AS BIGINT) AS cached_tokens, CAST(NULL AS DOUBLE) AS cost_usd, CAST(NULL AS BOOLEAN) AS copied,
    CAST(NULL AS STRUCT(call_index BIGINT, function_name VARCHAR)[]) AS calls
WHERE false
{%- else %}
{%- if files or refused %}
WITH {% include "sources/_trajectory_files.sql.j2" %},
narrow AS NOT MATERIALIZED (
    -- every figure of a step, so that the turn window below keeps only these, never a step's text
    SELECT
        run, trial_name, segment, source_file, problem, step_index, step_id, source,
        {{ atif.text("s.timestamp") }} AS stamp,
        -- ISO 8601 as Harbor writes it (datetime.isoformat()): a date, then a time to the microsecond and an
        -- offset (Z or +HH:MM) or none (UTC); any other form is no timestamp
        regexp_extract(stamp, '^([0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,6})?)?(Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?)$', ['local', 'offset']) AS parts,
        CASE WHEN problem IS NULL THEN coalesce({{ atif.text("s.model_name") }}, agent_model) END AS model_name,
        CASE WHEN problem IS NULL THEN {{ atif.chars("s.message") }} END AS message_chars,
        CASE WHEN problem IS NULL THEN coalesce(length({{ atif.text("s.reasoning_content") }}), 0) END AS reasoning_chars,
        CASE WHEN problem IS NULL THEN coalesce(len(s.tool_calls), 0) END AS tool_calls,
        -- each call's position and function, as tool_calls_src gives them: the tool_call_names view, for the
        -- queries that count calls without the cost of their arguments and observations
        list_transform(s.tool_calls, lambda c, k: {'call_index': k - 1,
            'function_name': {{ atif.text("c.function_name") }}}) AS calls,
        {{ count("prompt_tokens") }} AS prompt_tokens,
        {{ count("completion_tokens") }} AS completion_tokens,
        {{ count("cached_tokens") }} AS cached_tokens,
        CASE WHEN json_type(s.metrics.cost_usd) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
            AND isfinite(TRY_CAST(s.metrics.cost_usd AS DOUBLE)) THEN TRY_CAST(s.metrics.cost_usd AS DOUBLE) END
            AS cost_usd,
        copied
    FROM trajectory_step_rows
)
SELECT
    run, trial_name, segment, source_file, problem, step_index, step_id, {{ atif.turn() }} AS turn, source,
    stamp AS "timestamp",
    -- the local time less the offset: UTC
    try_cast(left(parts.local, length(parts.local) - length(parts.offset)) AS TIMESTAMP)
        - CASE WHEN parts.offset IN ('', 'Z') THEN INTERVAL 0 MINUTE ELSE
            (CASE WHEN starts_with(parts.offset, '-') THEN -1 ELSE 1 END)
            * (CAST(substr(parts.offset, 2, 2) AS INTEGER) * INTERVAL 1 HOUR
               + CAST(substr(parts.offset, 5, 2) AS INTEGER) * INTERVAL 1 MINUTE) END AS ts,
    model_name, message_chars, reasoning_chars, tool_calls, prompt_tokens, completion_tokens, cached_tokens, cost_usd,
    copied, calls
FROM narrow
{%- endif %}
{%- for c in copies %}
-- a run's rows from its cached copy (rlsql/cache/trajcopies.py; its damaged files are named from the entry's
-- record), under the name the run has now (an alias, or a parent folder's name beside another run's); a token
-- count the build found out of range (NULL in the copy) stops or is recorded as in place, and only where the
-- statement reads that count, so a copy warns exactly when the files would
{% if files or refused or not loop.first %}UNION ALL {% endif %}SELECT * REPLACE ({{ c.run | lit }} AS run
{%- for field in ("prompt_tokens", "completion_tokens", "cached_tokens") if bad_cells | default(none) in ("fail", "record") %}
{%- for path, index, column, value in c.bad_cells if column.endswith(".metrics." ~ field) %}
    {{- ", CASE" if loop.first }} WHEN source_file = {{ path | lit }} AND step_index = {{ index | lit }} THEN
        {%- if bad_cells == "record" %} CAST({{ BAD_CELL_FUNCTION | ident }}({{ path | lit }}, {{ index | lit }}, {{ column | lit }}, {{ value | lit }}) AS BIGINT)
        {%- else %} CAST(error({{ BAD_CELL_MARK | lit }}) AS BIGINT){% endif %}
    {%- if loop.last %} ELSE {{ field | ident }} END AS {{ field | ident }}{% endif %}
{%- endfor %}
{%- endfor %})
FROM read_parquet({{ c.parquet | lit }})
{%- endfor %}
{%- endif %}
