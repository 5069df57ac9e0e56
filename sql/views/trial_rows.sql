-- name: trial_rows
-- version: 2
-- description: One row per Harbor trial, from the run's trials CSV, else from its trace_jobs/*/result.json,
--   without the exception routing (the `trials` view adds it): run, row_no (CSV order, sorted trial folder
--   names for result.json files), task and trial names, n_episodes (turns), tokens, exception_type (`No
--   exception` when empty), reward, outcome (Success: reward > 0, Failure: reward = 0), durations, then, read
--   from result.json only (NULL for a CSV), exception_message, started_at and finished_at. Queries that
--   aggregate read this view and route per exception type afterwards, not per trial. The trials view fills
--   what a CSV lacks from the result.json beside it (trial_fill), this view does not: it reads no
--   result.json of a run with a CSV.
-- grain: run, trial_name
-- column: run: the run: its folder's name
-- column: row_no: the trial's position: CSV row order, or the sorted trial folder names for result.json files
-- column: task_name: the task the trial ran (e.g. calendar-0042), several trials per task
-- column: trial_name: the trial's unique name, `<task>__<7-character id>`
-- column: n_episodes: agent turns (terminus-2 episodes), NULL when the agent never ran
-- column: n_input_tokens: input tokens the agent used (cached tokens included)
-- column: n_output_tokens: output tokens the agent generated
-- column: exception_type: the exception that ended the trial (Python class name), `No exception` when none
-- column: reward: the verifier's raw reward (usually 0 or 1), NULL when the verifier did not run
-- column: outcome: Success (reward > 0) or Failure (reward = 0), NULL without a reward or for a negative one
-- column: agent_duration_sec: agent execution seconds (older parsers, replaced by the phase columns)
-- column: trial_duration: the whole trial's seconds (newest parser)
-- column: environment_setup_duration: seconds to set up the sandbox environment
-- column: agent_setup_duration: seconds to set up the agent
-- column: agent_execution_duration: seconds the agent ran
-- column: verifier_duration: seconds the verifier ran
-- column: exception_message: the exception's message (result.json only, NULL for a trials CSV)
-- column: started_at: when the trial started, UTC (result.json only, NULL for a trials CSV)
-- column: finished_at: when the trial finished, UTC (result.json only, NULL for a trials CSV)
SELECT
    t.run,
    t.row_no,
    t.task_name,
    t.trial_name,
    CAST(t.n_episodes AS BIGINT) AS n_episodes,
    CAST(t.n_input_tokens AS BIGINT) AS n_input_tokens,
    CAST(t.n_output_tokens AS BIGINT) AS n_output_tokens,
    coalesce(nullif(trim(t.exception_type), ''), 'No exception') AS exception_type,
    t.reward,
    CASE WHEN t.reward > 0 THEN 'Success' WHEN t.reward = 0 THEN 'Failure' END AS outcome,
    t.agent_duration_sec,
    t.trial_duration,
    t.environment_setup_duration,
    t.agent_setup_duration,
    t.agent_execution_duration,
    t.verifier_duration,
    t.exception_message,
    -- result.json stamps: with an offset (`...Z`, `+02:00`) read as that instant in UTC, without one as written
    CASE
        WHEN regexp_matches(t.started_at, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN timezone('UTC', try_cast(t.started_at AS TIMESTAMPTZ))
        ELSE try_cast(t.started_at AS TIMESTAMP)
    END AS started_at,
    CASE
        WHEN regexp_matches(t.finished_at, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN timezone('UTC', try_cast(t.finished_at AS TIMESTAMPTZ))
        ELSE try_cast(t.finished_at AS TIMESTAMP)
    END AS finished_at
FROM (
    -- explicit columns: a new CSV column never changes this view
    SELECT
        run, row_no, task_name, trial_name, n_episodes, n_input_tokens, n_output_tokens, exception_type, reward,
        agent_duration_sec, trial_duration, environment_setup_duration, agent_setup_duration,
        agent_execution_duration, verifier_duration,
        CAST(NULL AS VARCHAR) AS exception_message, CAST(NULL AS VARCHAR) AS started_at,
        CAST(NULL AS VARCHAR) AS finished_at
    FROM trials_src
    -- runs without a trials CSV: Harbor's result.json files (harbor_trials_src lists no run that has a CSV),
    -- the trials only (a row with a problem is a file that is no trial: see rlsql check)
    UNION ALL
    SELECT
        run, row_no, task_name, trial_name, n_episodes, n_input_tokens, n_output_tokens, exception_type, reward,
        agent_duration_sec, trial_duration, environment_setup_duration, agent_setup_duration,
        agent_execution_duration, verifier_duration, exception_message, started_at, finished_at
    FROM harbor_trials_src
    WHERE problem IS NULL
) AS t
