-- name: tool_calls_src
-- version: 1
-- description: Every tool call of every trial's agent trajectory (ATIF), read in place: one row per element of
--   a step's `tool_calls` in `trace_jobs/<trial>/agent/trajectory.json` and `trajectory.cont-N.json`, with the
--   step's segment, step_id, position in its file (step_index), turn and copied flag, the call's position
--   (call_index), tool_call_id, function_name, its arguments as canonical JSON text (keys sorted at every
--   depth, no spaces, non-ASCII kept: Python's json.dumps(a, sort_keys=True, separators=(",", ":"),
--   ensure_ascii=False)) and the characters of the step's observation results whose source_call_id is the
--   call's id. Damaged files have no rows here (trajectory_steps_src names them).
-- artifact: trajectories
{%- import "sources/_atif.sql.j2" as atif %}
{#- the step fields read (sources/_trajectory_files.sql.j2) -#}
{#- `observations`: false in tool_call_arguments_src, which reads neither the observations nor their content
    (reading them is about a fifth of this source's CPU) and gives no observation_chars -#}
{%- set observations = observations | default(true) %}
{%- set step_fields = '"tool_calls": [{"tool_call_id": "JSON", "function_name": "JSON", "arguments": "JSON"}]'
    ~ (', "observation": {"results": [{"source_call_id": "JSON", "content": "JSON"}]}' if observations else '') %}
{%- set copies = copies | default([]) %}
{%- if not files and not refused and not copies %}
-- no run has a trajectory: the same columns and no rows
SELECT
    CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS trial_name, CAST(NULL AS INTEGER) AS segment,
    CAST(NULL AS BIGINT) AS step_index, CAST(NULL AS BIGINT) AS step_id,
    CAST(NULL AS BIGINT) AS turn, CAST(NULL AS BIGINT) AS call_index, CAST(NULL AS VARCHAR) AS tool_call_id,
    CAST(NULL AS VARCHAR) AS function_name, CAST(NULL AS VARCHAR) AS arguments,
    {%- if observations %} CAST(NULL AS BIGINT) AS observation_chars,{% endif %} CAST(NULL AS BOOLEAN) AS copied
WHERE false
{%- else %}
{%- if files or refused %}
WITH RECURSIVE {% include "sources/_trajectory_files.sql.j2" %},
results AS NOT MATERIALIZED (
    -- each step's calls and observation results as narrow values (a result: the call it answers, its characters)
    SELECT run, trial_name, segment, step_index, step_id, coalesce(source = 'agent' AND NOT copied, false) AS agent,
        copied,
        list_transform(s.tool_calls, lambda c, k: {
            'call_index': k - 1,
            'tool_call_id': {{ atif.text("c.tool_call_id") }},
            'function_name': {{ atif.text("c.function_name") }},
            'a': c.arguments}) AS calls
        {%- if observations %},
        list_transform(list_filter(s.observation.results, lambda r: json_type(r.source_call_id) = 'VARCHAR'),
            lambda r: {'id': r.source_call_id ->> '$', 'n': {{ atif.chars("r.content") }}}) AS answers
        {%- endif %}
    FROM trajectory_step_rows
    -- the steps with a call, and the agent steps without one (each a turn all the same): filtered here, on the
    -- file's list, not below on the calls with their observations (DuckDB would compute those twice)
    WHERE problem IS NULL AND (len(s.tool_calls) > 0 OR coalesce(source = 'agent' AND NOT copied, false))
),
steps AS NOT MATERIALIZED (
    {%- if observations %}
    -- the characters of the results answering each call (a NULL id matches nothing)
    SELECT * EXCLUDE (calls, answers),
        CASE WHEN len(answers) = 0 THEN list_transform(calls, lambda c: struct_insert(c, observation_chars := 0))
        ELSE list_transform(calls, lambda c: struct_insert(c, observation_chars := coalesce(CAST(list_sum(
            list_transform(list_filter(answers, lambda r: r.id = c.tool_call_id), lambda r: r.n)) AS BIGINT), 0)))
        END AS calls
    {%- else %}
    SELECT *
    {%- endif %}
    FROM results
),
rows AS NOT MATERIALIZED (
    -- one row per call, and one without a call for an agent step that made none (it is a turn all the same):
    -- the turn window below then holds only flat values, never a list
    SELECT run, trial_name, segment, step_index, step_id, agent, copied,
        unnest(CASE WHEN len(calls) > 0 THEN calls ELSE [NULL] END) AS c
    FROM steps
),
calls AS NOT MATERIALIZED (
    SELECT run, trial_name, segment, step_index, step_id, copied,
        CASE WHEN agent THEN dense_rank() OVER (PARTITION BY run, trial_name, agent
            ORDER BY segment, step_id, step_index) END AS turn,
        c.call_index, c.tool_call_id, c.function_name, c.a,{% if observations %} c.observation_chars,{% endif %}
        json_type(c.a) AS a_type
    FROM rows
    QUALIFY c IS NOT NULL
),
-- read three times below (the nested arguments are walked from it): computed once. Its rows sorted first, so that
-- they come in full vectors (a file gives a few rows at a time, and on so few the canonical text cost 20 times
-- what it costs on full ones: 45k trials, minutes)
canonical AS MATERIALIZED (
    SELECT *,
        -- a scalar, an object of scalars without a repeated key (nearly every call's arguments), or (NULL) one
        -- to walk below (`flat`: not one to walk)
        CASE
            WHEN a IS NULL THEN NULL
            WHEN a_type NOT IN ('OBJECT', 'ARRAY') THEN {{ atif.scalar("a_type", "a") }}
            WHEN flat THEN {{ atif.flat_object(atif.sorted_members("a")) }}
        END AS simple
    FROM (
        SELECT *,
            a IS NULL OR a_type NOT IN ('OBJECT', 'ARRAY') OR (a_type = 'OBJECT'
                AND NOT coalesce(list_bool_or(list_transform(json_extract(a, '$.*'),
                    lambda v: json_type(v) IN ('OBJECT', 'ARRAY'))), false)
                AND len(list_distinct(json_keys(a))) = len(json_keys(a))) AS flat
        FROM (
            SELECT run, trial_name, segment, step_index, step_id, turn, copied, call_index, tool_call_id,
                function_name,{% if observations %} observation_chars,{% endif %} a, a_type
            FROM calls
            ORDER BY run, trial_name, segment, step_id, step_index, call_index
        )
    )
),
-- arguments that nest objects or arrays: canonical text from their tree (json_tree: one row per node, `id` in
-- document order, `parent` the container's id). Each node gets a path of sibling ranks from the root (an
-- object's members ranked by key, a repeated key keeping only its last member; an array's by position) and a
-- token (its separator, key and scalar or opening bracket); each container a closing token after its last
-- descendant. The tokens in path order are the canonical text.
nodes AS (
    SELECT x.run, x.trial_name, x.segment, x.step_index, x.call_index, j.id, j.parent, j.type, j.key, j.value
    FROM canonical AS x, json_tree(x.a) AS j
    WHERE NOT x.flat
),
ranked AS (
    SELECT c.*, p.type AS parent_type,
        row_number() OVER (PARTITION BY c.run, c.trial_name, c.segment, c.step_index, c.call_index, c.parent
            ORDER BY CASE WHEN p.type = 'OBJECT' THEN c.key END,
                CASE WHEN p.type = 'OBJECT' THEN -CAST(c.id AS BIGINT) ELSE CAST(c.id AS BIGINT) END) AS r,
        p.type = 'OBJECT' AND lag(c.key) OVER (PARTITION BY c.run, c.trial_name, c.segment, c.step_index, c.call_index, c.parent
            ORDER BY c.key, c.id DESC) IS NOT DISTINCT FROM c.key AS repeated
    FROM nodes AS c
    LEFT JOIN nodes AS p ON p.run = c.run AND p.trial_name = c.trial_name AND p.segment = c.segment
        AND p.step_index = c.step_index
        AND p.call_index = c.call_index AND p.id = c.parent
),
walk(run, trial_name, segment, step_index, call_index, id, type, path, token) AS (
    SELECT run, trial_name, segment, step_index, call_index, id, type, [0]::BIGINT[],
        CASE type WHEN 'OBJECT' THEN '{' WHEN 'ARRAY' THEN '[' ELSE {{ atif.scalar("type", "value") }} END
    FROM ranked WHERE parent IS NULL
    UNION ALL
    SELECT c.run, c.trial_name, c.segment, c.step_index, c.call_index, c.id, c.type, list_append(p.path, c.r),
        CASE WHEN c.r > 1 THEN ',' ELSE '' END
        || CASE WHEN c.parent_type = 'OBJECT' THEN {{ atif.key("c.key") }} || ':' ELSE '' END
        || CASE c.type WHEN 'OBJECT' THEN '{' WHEN 'ARRAY' THEN '[' ELSE {{ atif.scalar("c.type", "c.value") }} END
    FROM walk AS p
    JOIN ranked AS c ON c.run = p.run AND c.trial_name = p.trial_name AND c.segment = p.segment
        AND c.step_index = p.step_index
        AND c.call_index = p.call_index AND c.parent = p.id
    WHERE p.type IN ('OBJECT', 'ARRAY') AND NOT c.repeated
),
walked AS (
    SELECT run, trial_name, segment, step_index, call_index,
        array_to_string(list_transform(list_sort(list({'p': path, 't': token})), lambda x: x.t), '') AS text
    FROM (
        SELECT run, trial_name, segment, step_index, call_index, path, token FROM walk
        UNION ALL
        SELECT run, trial_name, segment, step_index, call_index, list_append(path, 9223372036854775807),
            CASE type WHEN 'OBJECT' THEN '}' ELSE ']' END
        FROM walk WHERE type IN ('OBJECT', 'ARRAY')
    )
    GROUP BY run, trial_name, segment, step_index, call_index
)
SELECT
    x.run, x.trial_name, x.segment, x.step_index, x.step_id, x.turn, x.call_index, x.tool_call_id,
    x.function_name, coalesce(x.simple, w.text) AS arguments,{% if observations %} x.observation_chars,{% endif %}
    x.copied
FROM canonical AS x
LEFT JOIN walked AS w ON w.run = x.run AND w.trial_name = x.trial_name AND w.segment = x.segment
    AND w.step_index = x.step_index AND w.call_index = x.call_index
{%- endif %}
{%- for c in copies %}
-- a run's rows from its cached copy (rlsql/cache/trajcopies.py; its damaged files are named from the entry's
-- record), under the name the run has now (an alias, or a parent folder's name beside another run's)
{% if files or refused or not loop.first %}UNION ALL {% endif %}SELECT *
    {%- if not observations %} EXCLUDE (observation_chars){% endif %} REPLACE ({{ c.run | lit }} AS run)
FROM read_parquet({{ c.parquet | lit }})
{%- endfor %}
{%- endif %}
