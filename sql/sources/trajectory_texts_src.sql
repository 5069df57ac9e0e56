-- name: trajectory_texts_src
-- version: 1
-- description: The words of every trial's agent trajectory, for `rlsql trial` (rendered there over one trial's
--   files): one row per step of `trace_jobs/<trial>/agent/trajectory.json` and `trajectory.cont-N.json` with its
--   segment, step_id, place in the file (step_index), source, the timestamp as written, the message and the
--   reasoning as text (a content part that is no text shows as `[image: PATH]`), its tool calls (a JSON array
--   of tool_call_id, function_name, arguments) and observation results (a JSON array of source_call_id,
--   content as text); plus one row per damaged file with `problem` saying why.
-- artifact: trajectories
{%- import "sources/_atif.sql.j2" as atif %}
{#- the step fields read (sources/_trajectory_files.sql.j2) -#}
{%- set step_fields = '"timestamp": "JSON", "message": "JSON", "reasoning_content": "JSON", '
    ~ '"tool_calls": [{"tool_call_id": "JSON", "function_name": "JSON", "arguments": "JSON"}], '
    ~ '"observation": {"results": [{"source_call_id": "JSON", "content": "JSON"}]}' %}
{#- a message or an observation's content as text: a string, or its parts joined (text as it is, an image or
    audio part as [type: path]) -#}
{%- macro words(j) -%}
    CASE json_type({{ j }})
        WHEN 'VARCHAR' THEN {{ j }} ->> '$'
        WHEN 'ARRAY' THEN array_to_string(list_transform(
            from_json({{ j }}, '[{"type": "VARCHAR", "text": "VARCHAR", "source": {"path": "VARCHAR"}}]'),
            lambda p: CASE WHEN p.type = 'text' THEN coalesce(p.text, '')
                ELSE '[' || coalesce(p.type, 'part') || ': ' || coalesce(p.source.path, '?') || ']' END), '')
    END
{%- endmacro %}
{%- if not files and not refused %}
SELECT
    CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS trial_name, CAST(NULL AS INTEGER) AS segment,
    CAST(NULL AS VARCHAR) AS source_file, CAST(NULL AS VARCHAR) AS problem, CAST(NULL AS BIGINT) AS step_index,
    CAST(NULL AS BIGINT) AS step_id, CAST(NULL AS VARCHAR) AS source, CAST(NULL AS VARCHAR) AS "timestamp",
    CAST(NULL AS VARCHAR) AS message, CAST(NULL AS VARCHAR) AS reasoning,
    CAST(NULL AS VARCHAR) AS calls, CAST(NULL AS VARCHAR) AS observations
WHERE false
{%- else %}
WITH {% include "sources/_trajectory_files.sql.j2" %}
SELECT
    run, trial_name, segment, source_file, problem, step_index, step_id, source,
    {{ atif.text("s.timestamp") }} AS "timestamp",
    {{ words("s.message") }} AS message,
    {{ atif.text("s.reasoning_content") }} AS reasoning,
    -- as JSON text (a source's columns are plain types: the shell and the Spark engine take them as they are)
    CAST(to_json(list_transform(s.tool_calls, lambda c: {'tool_call_id': {{ atif.text("c.tool_call_id") }},
        'function_name': {{ atif.text("c.function_name") }}, 'arguments': CAST(c.arguments AS VARCHAR)}))
        AS VARCHAR) AS calls,
    CAST(to_json(list_transform(s.observation.results, lambda r: {'source_call_id': {{ atif.text("r.source_call_id") }},
        'content': {{ words("r.content") }}})) AS VARCHAR) AS observations
FROM trajectory_step_rows
{%- endif %}
