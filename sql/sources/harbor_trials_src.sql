-- name: harbor_trials_src
-- version: 2
-- description: Harbor's own trial results read in place, for runs without a `*_trial_results.csv`: one row per `trace_jobs/<trial>/result.json`, mapped to the CSV's columns as the log parser maps them (n_episodes from agent_result.metadata, reward from verifier_result.rewards.reward, each duration = finished_at - started_at of its timing block), plus exception_message, started_at and finished_at. row_no follows the trial folder names, sorted. A file that is no trial (not a regular file, not UTF-8, not a JSON object, ...) has a row with `problem` saying why and every trial column NULL: read trials with `WHERE problem IS NULL` (trial_rows does). `bad_values` lists (joined with `; `) the numbers of the wrong type read as NULL (`verifier_result.rewards.reward: true is not a number`), `nonfinite` (joined with `, `) the fields holding NaN or Infinity, read as NULL; both NULL when there are none.
-- artifact: harbor
-- optional: true
-- columns: task_name VARCHAR, trial_name VARCHAR, n_episodes DOUBLE, n_input_tokens DOUBLE, n_output_tokens DOUBLE, exception_type VARCHAR, reward DOUBLE, agent_duration_sec DOUBLE, trial_duration DOUBLE, environment_setup_duration DOUBLE, agent_setup_duration DOUBLE, agent_execution_duration DOUBLE, verifier_duration DOUBLE, exception_message VARCHAR, started_at VARCHAR, finished_at VARCHAR, problem VARCHAR, bad_values VARCHAR, nonfinite VARCHAR
{#- One read per run over the result.json files rlsql listed itself (rlsql/runs/harbor.py: os.scandir, one
    stat each, never opening a file, so a FIFO cannot block the read). Each path reaches read_blob
    with its glob characters escaped, and every file DuckDB returns is joined back to its listed
    path: a file that is not one of them fails the query. read_blob + try(decode()) instead of
    read_text: one file that is not UTF-8 must not fail every query. from_json parses each file
    once into the declared structure (fields rlsql does not use, such as config or the agent's
    message log, are skipped). The numbers come out as JSON so that their JSON type is checked:
    a boolean or string is not a number (from_json would read `true` and "1.0" as 1.0), NaN and
    Infinity are NULL as `nan` CSV cells are, and a count must be a whole number a DOUBLE holds
    exactly. A run that also has a trials CSV is not listed here: the CSV wins (see docs/semantics.md). -#}
{%- set timing = '{"started_at": "VARCHAR", "finished_at": "VARCHAR"}' %}
{%- set structure = '{"task_name": "VARCHAR", "trial_name": "VARCHAR", '
    ~ '"agent_result": {"n_input_tokens": "JSON", "n_output_tokens": "JSON", "metadata": {"n_episodes": "JSON"}}, '
    ~ '"verifier_result": {"rewards": {"reward": "JSON"}}, '
    ~ '"exception_info": {"exception_type": "VARCHAR", "exception_message": "VARCHAR"}, '
    ~ '"started_at": "VARCHAR", "finished_at": "VARCHAR", '
    ~ '"environment_setup": ' ~ timing ~ ', "agent_setup": ' ~ timing ~ ', '
    ~ '"agent_execution": ' ~ timing ~ ', "verifier": ' ~ timing ~ '}' %}
{#- the numeric fields: (column, JSON path as the warnings name it, whole number?) -#}
{%- set numbers = [
    ("n_episodes", "agent_result.metadata.n_episodes", true),
    ("n_input_tokens", "agent_result.n_input_tokens", true),
    ("n_output_tokens", "agent_result.n_output_tokens", true),
    ("reward", "verifier_result.rewards.reward", false),
] %}
{%- macro seconds(started, finished) -%}
    {#- finished_at - started_at like the parser's datetime.fromisoformat arithmetic: both stamps with
        an offset, or both without (then read as wall-clock time); a mixed or unreadable pair is NULL -#}
    CASE
        WHEN regexp_matches({{ started }}, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            AND regexp_matches({{ finished }}, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN date_diff('microsecond', try_cast({{ started }} AS TIMESTAMPTZ), try_cast({{ finished }} AS TIMESTAMPTZ)) / 1e6
        WHEN NOT regexp_matches({{ started }}, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            AND NOT regexp_matches({{ finished }}, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN date_diff('microsecond', try_cast({{ started }} AS TIMESTAMP), try_cast({{ finished }} AS TIMESTAMP)) / 1e6
    END
{%- endmacro %}
{%- macro is_number(json) -%}
    json_type({{ json }}) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
{%- endmacro %}
{#- `j.` and a dotted field (agent_result.metadata.n_episodes), each name through the identifier filter -#}
{%- macro field_of_j(field) -%}
    j{% for name in field.split(".") %}.{{ name | ident }}{% endfor %}
{%- endmacro %}
{%- if not files %}
-- no run reads Harbor trials: the same columns and no rows (binding the reader below cost ~30 ms of
-- every trial query's start on a run with a trials CSV)
SELECT
    CAST(NULL AS VARCHAR) AS run,
    CAST(NULL AS VARCHAR) AS source_file,
    CAST(NULL AS BIGINT) AS row_no
    {%- for c in columns %},
    CAST(NULL AS {{ c.type | sqltype }}) AS {{ c.name | ident }}
    {%- endfor %}
WHERE false
{%- else %}
WITH listed AS (
    -- every trial folder's result.json as rlsql/runs/harbor.py listed it, sorted by folder name: a run's
    -- names come '/'-joined in one literal (no folder name holds a '/'), which DuckDB parses at once
    -- where a VALUES row or list element per file costs seconds over 20,000 files; the runs come as
    -- three lists unnested side by side, one branch for all runs (a UNION ALL branch per run took
    -- ~0.3 s to plan over 200 Harbor runs)
    SELECT run, i AS row_no, prefix || '/' || names[i] || '/result.json' AS path
    FROM (
        SELECT
            unnest(CAST([{% for f in files if f.names %}{{ f.run | lit }}{{ ", " if not loop.last }}{% endfor %}] AS VARCHAR[])) AS run,
            unnest(CAST([{% for f in files if f.names %}{{ f.prefix | lit }}{{ ", " if not loop.last }}{% endfor %}] AS VARCHAR[])) AS prefix,
            string_split(unnest(CAST([{% for f in files if f.names %}{{ f.names | lit }}{{ ", " if not loop.last }}{% endfor %}] AS VARCHAR[])), '/') AS names
    ), range(1, len(names) + 1) AS r(i)
),
refused AS (
    -- the listed files rlsql does not hand DuckDB, and why (a FIFO, a dangling link, ...)
    {%- for t in refused %}
    SELECT {{ t.run | lit }} AS run, {{ t.path | lit }} AS path, {{ t.problem | lit }} AS problem UNION ALL
    {%- endfor %}
    SELECT CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS path, CAST(NULL AS VARCHAR) AS problem WHERE false
),
scanned AS (
    {%- for f in files if f.read_names %}
    {{ "UNION ALL " if not loop.first }}SELECT {{ f.run | lit }} AS run, filename, content
    -- the paths built from the escaped names, so that DuckDB opens each as that exact file
    FROM read_blob(list_transform(string_split({{ f.read_names | lit }}, '/'),
        lambda name: {{ f.reader_prefix | lit }} || '/' || name || '/result.json'))
    {%- else %}
    SELECT CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS filename, CAST(NULL AS BLOB) AS content
    WHERE false
    {%- endfor %}
),
checked AS (
    SELECT
        coalesce(l.run, s.run) AS run,
        l.row_no,
        coalesce(l.path, s.filename) AS path,
        -- one parse per file: try() turns a file that is not JSON into NULL, classified below
        CASE WHEN x.problem IS NULL AND s.text IS NOT NULL AND regexp_matches(s.text, '^[ \t\n\r]*\{')
            THEN try(from_json(s.text, {{ structure | lit }})) END AS j,
        x.problem AS refused,
        s.filename,
        s.text,
        l.path AS listed_path
    FROM listed AS l
    LEFT JOIN refused AS x ON x.run = l.run AND x.path = l.path
    FULL OUTER JOIN (SELECT run, filename, try(decode(content)) AS text FROM scanned) AS s
        ON s.run = l.run AND s.filename = l.path
),
parsed AS (
    SELECT
        run, row_no, path, j,
        CASE
            WHEN listed_path IS NULL THEN error({{ DATA_ERROR_MARK | lit }} || filename
                || ': DuckDB read a file that is not one rlsql listed (a path taken as a glob pattern?)')
            WHEN refused IS NOT NULL THEN refused
            WHEN filename IS NULL THEN 'vanished before it could be read'
            WHEN text IS NULL THEN 'not UTF-8 text'
            WHEN j IS NOT NULL THEN NULL
            WHEN NOT json_valid(text) THEN 'not valid JSON (cut off mid-write, or not JSON at all)'
            WHEN json_type(text) = 'OBJECT' THEN 'a JSON object DuckDB cannot read as a trial result'
            -- valid JSON whose first character is not `{` is no object
            ELSE 'not a JSON object (' || lower(json_type(text)) || '): a trial result is one'
        END AS problem
    FROM checked
),
numbers AS (
    SELECT
        run, row_no, path, problem, j,
        {%- for column, field, whole in numbers %}
        {{ field_of_j(field) }} AS {{ (column ~ "_json") | ident }},
        CASE WHEN {{ is_number(field_of_j(field)) }} THEN TRY_CAST({{ field_of_j(field) }} AS DOUBLE) END
            AS {{ (column ~ "_number") | ident }}{{ "," if not loop.last }}
        {%- endfor %}
    FROM parsed
),
typed AS (
    SELECT
        run, row_no, path, problem, j,
        {%- for column, field, whole in numbers %}
        {%- set number, json = (column ~ "_number") | ident, (column ~ "_json") | ident %}
        CASE WHEN isfinite({{ number }})
            {%- if whole %} AND {{ number }} = trunc({{ number }}) AND abs({{ number }}) <= 9007199254740992{% endif %}
            THEN {{ number }} END AS {{ column | ident }},
        {%- endfor %}
        -- the values read as NULL because they are no number of the right kind (docs/semantics.md)
        list_filter([
            {%- for column, field, whole in numbers %}
            {%- set number, json = (column ~ "_number") | ident, (column ~ "_json") | ident %}
            CASE
                WHEN {{ json }} IS NULL OR json_type({{ json }}) = 'NULL' THEN NULL
                WHEN NOT {{ is_number(json) }}
                    THEN {{ (field ~ ': ') | lit }} || left(CAST({{ json }} AS VARCHAR), 40) || ' is not a number'
                {%- if whole %}
                WHEN isfinite({{ number }}) AND {{ number }} <> trunc({{ number }})
                    THEN {{ (field ~ ': ') | lit }} || CAST({{ json }} AS VARCHAR) || ' is not a whole number'
                WHEN isfinite({{ number }}) AND abs({{ number }}) > 9007199254740992
                    THEN {{ (field ~ ': ') | lit }} || CAST({{ json }} AS VARCHAR) || ' is out of range'
                {%- endif %}
            END{{ "," if not loop.last }}
            {%- endfor %}
        ], lambda x: x IS NOT NULL) AS bad_values,
        list_filter([
            {%- for column, field, whole in numbers %}
            {%- set number, json = (column ~ "_number") | ident, (column ~ "_json") | ident %}
            CASE WHEN {{ is_number(json) }} AND NOT coalesce(isfinite({{ number }}), false)
                THEN {{ field | lit }} END{{ "," if not loop.last }}
            {%- endfor %}
        ], lambda x: x IS NOT NULL) AS nonfinite
    FROM numbers
)
SELECT
    run,
    path AS source_file,
    row_no,
    j.task_name AS task_name,
    j.trial_name AS trial_name,
    n_episodes,
    n_input_tokens,
    n_output_tokens,
    j.exception_info.exception_type AS exception_type,
    reward,
    -- the older parsers' agent_duration_sec; the current one writes agent_execution_duration instead
    CAST(NULL AS DOUBLE) AS agent_duration_sec,
    {{ seconds("j.started_at", "j.finished_at") }} AS trial_duration,
    {{ seconds("j.environment_setup.started_at", "j.environment_setup.finished_at") }} AS environment_setup_duration,
    {{ seconds("j.agent_setup.started_at", "j.agent_setup.finished_at") }} AS agent_setup_duration,
    {{ seconds("j.agent_execution.started_at", "j.agent_execution.finished_at") }} AS agent_execution_duration,
    {{ seconds("j.verifier.started_at", "j.verifier.finished_at") }} AS verifier_duration,
    j.exception_info.exception_message AS exception_message,
    j.started_at AS started_at,
    j.finished_at AS finished_at,
    problem,
    CASE WHEN len(bad_values) > 0 THEN array_to_string(bad_values, '; ') END AS bad_values,
    CASE WHEN len(nonfinite) > 0 THEN array_to_string(nonfinite, ', ') END AS nonfinite
FROM typed
{%- endif %}
