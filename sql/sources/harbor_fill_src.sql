-- name: harbor_fill_src
-- version: 1
-- description: Harbor's result.json files of the runs that also have a trials CSV (the CSV gives the trials): per file, the columns a CSV lacks, read in place only by a query that reads one of them (the trial_fill view groups them by trial_name, the trials view and trial_phases join that to the CSV's rows). exception_message, started_at and finished_at for every such run; trial_duration and the four phase durations only for a run whose CSV has no such column (a parser older than the newest), NULL for the others. Files are read as harbor_trials_src reads them: a file that is no trial has `problem` set.
-- artifact: harbor
-- optional: true
-- columns: trial_name VARCHAR, trial_duration DOUBLE, environment_setup_duration DOUBLE, agent_setup_duration DOUBLE, agent_execution_duration DOUBLE, verifier_duration DOUBLE, exception_message VARCHAR, started_at VARCHAR, finished_at VARCHAR, problem VARCHAR
{#- `files`: the runs with trace_jobs beside a trials CSV (SourceContext.harbor_context); `json_phases`:
    duration column -> the runs whose CSV lacks it (SourceContext.json_phases). Not loaded as a table, so that
    DuckDB drops the read when no column of it is used (a LEFT JOIN to rows grouped by its key). -#}
SELECT
    run,
    source_file,
    row_no,
    trial_name,
    {%- for c in ["trial_duration", "environment_setup_duration", "agent_setup_duration", "agent_execution_duration",
                  "verifier_duration"] %}
    {%- if json_phases.get(c) %}
    CASE WHEN run IN ({% for r in json_phases[c] %}{{ ", " if not loop.first }}{{ r | lit }}{% endfor %})
        THEN {{ c | ident }} END AS {{ c | ident }},
    {%- else %}
    CAST(NULL AS DOUBLE) AS {{ c | ident }},
    {%- endif %}
    {%- endfor %}
    exception_message,
    started_at,
    finished_at,
    problem
FROM (
{% include "sources/harbor_trials_src.sql" %}
) AS harbor
