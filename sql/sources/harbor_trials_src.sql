-- name: harbor_trials_src
-- version: 1
-- description: Harbor's own trial results read in place, for runs without a `*_trial_results.csv`: one row per `trace_jobs/<trial>/result.json`, mapped to the CSV's columns as the log parser maps them (n_episodes from agent_result.metadata, reward from verifier_result.rewards.reward, each duration = finished_at - started_at of its timing block), plus exception_message, started_at and finished_at. row_no follows the trial folder names, sorted.
-- artifact: harbor
-- optional: true
-- columns: task_name VARCHAR, trial_name VARCHAR, n_episodes DOUBLE, n_input_tokens DOUBLE, n_output_tokens DOUBLE, exception_type VARCHAR, reward DOUBLE, agent_duration_sec DOUBLE, trial_duration DOUBLE, environment_setup_duration DOUBLE, agent_setup_duration DOUBLE, agent_execution_duration DOUBLE, verifier_duration DOUBLE, exception_message VARCHAR, started_at VARCHAR, finished_at VARCHAR
{#- One read per run over its trace_jobs/*/result.json: read_text takes each file whole and
    from_json parses it into the declared structure (fields rlsql does not use, such as config or
    the agent's message log, are skipped; a value of the wrong JSON type reads as NULL). This is
    several times faster than read_json over thousands of small files, and a file that is not
    valid JSON fails the query naming the file. A run that also has a trials CSV is not listed
    here: the CSV wins (see docs/semantics.md). -#}
{#- from_json's structure: the result.json fields rlsql reads, with their types -#}
{%- set timing = '{"started_at": "VARCHAR", "finished_at": "VARCHAR"}' %}
{%- set structure = '{"task_name": "VARCHAR", "trial_name": "VARCHAR", '
    ~ '"agent_result": {"n_input_tokens": "DOUBLE", "n_output_tokens": "DOUBLE", "metadata": {"n_episodes": "DOUBLE"}}, '
    ~ '"verifier_result": {"rewards": {"reward": "DOUBLE"}}, '
    ~ '"exception_info": {"exception_type": "VARCHAR", "exception_message": "VARCHAR"}, '
    ~ '"started_at": "VARCHAR", "finished_at": "VARCHAR", '
    ~ '"environment_setup": ' ~ timing ~ ', "agent_setup": ' ~ timing ~ ', '
    ~ '"agent_execution": ' ~ timing ~ ', "verifier": ' ~ timing ~ '}' %}
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
WITH raw AS (
    SELECT run, filename, j.*
    FROM (
    {%- for f in files %}
        {{ "UNION ALL " if not loop.first }}SELECT {{ f.run | lit }} AS run, filename,
            CASE
                WHEN json_valid(content) THEN from_json(content, {{ structure | lit }})
                ELSE error('rlsql-data: ' || filename || ': not valid JSON (a Harbor trial result.json)')
            END AS j
        FROM read_text({% if f.paths is not none %}[{% for p in f.paths %}{{ p | lit }}{{ ", " if not loop.last }}{% endfor %}]{% else %}{{ f.pattern | lit }}{% endif %})
        -- a result.json that does not parse and changed in the last two minutes is a trial being
        -- written (a run in progress): left out, without a warning, until it is whole
        WHERE json_valid(content) OR last_modified < now() - INTERVAL 2 MINUTE
    {%- else %}
        SELECT CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS filename,
            from_json('{}', {{ structure | lit }}) AS j
        WHERE false
    {%- endfor %}
    ) AS t
)
SELECT
    run,
    filename AS source_file,
    -- the parser lists trial folders in directory order; rlsql reads them sorted by folder name
    row_number() OVER (PARTITION BY run ORDER BY parse_filename(parse_dirpath(filename))) AS row_no,
    task_name,
    trial_name,
    agent_result.metadata.n_episodes AS n_episodes,
    agent_result.n_input_tokens AS n_input_tokens,
    agent_result.n_output_tokens AS n_output_tokens,
    exception_info.exception_type AS exception_type,
    verifier_result.rewards.reward AS reward,
    -- the older parsers' agent_duration_sec; the current one writes agent_execution_duration instead
    CAST(NULL AS DOUBLE) AS agent_duration_sec,
    {{ seconds("started_at", "finished_at") }} AS trial_duration,
    {{ seconds("environment_setup.started_at", "environment_setup.finished_at") }} AS environment_setup_duration,
    {{ seconds("agent_setup.started_at", "agent_setup.finished_at") }} AS agent_setup_duration,
    {{ seconds("agent_execution.started_at", "agent_execution.finished_at") }} AS agent_execution_duration,
    {{ seconds("verifier.started_at", "verifier.finished_at") }} AS verifier_duration,
    exception_info.exception_message AS exception_message,
    started_at,
    finished_at
FROM raw
