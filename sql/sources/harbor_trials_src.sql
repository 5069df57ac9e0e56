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
{% include "sources/_harbor_read.sql.j2" %}
{%- endif %}
