-- name: trials_src
-- version: 1
-- description: Raw rows of each run's `*_trial_results.csv` (one per Harbor trial), read in place: run, source_file, row_no (CSV order), then the file's columns by name.
-- artifact: trials
-- columns: task_name VARCHAR, trial_name VARCHAR, n_episodes DOUBLE, n_input_tokens DOUBLE, n_output_tokens DOUBLE, exception_type VARCHAR, reward DOUBLE, agent_duration_sec DOUBLE, trial_duration DOUBLE, environment_setup_duration DOUBLE, agent_setup_duration DOUBLE, agent_execution_duration DOUBLE, verifier_duration DOUBLE
-- other_columns: VARCHAR
{% include "sources/_read_csv.sql.j2" %}
