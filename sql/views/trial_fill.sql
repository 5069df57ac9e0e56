-- name: trial_fill
-- version: 1
-- description: For a run with both a trials CSV and trace_jobs/: per trial_name, what its result.json holds
--   that the CSV lacks (the trials view and trial_phases join it to the CSV's rows by run and trial_name):
--   exception_message, started_at and finished_at, and the durations the run's CSV has no column for (a
--   parser older than the newest, NULL where the CSV has the column). Two files naming one trial: the first
--   in folder order. A result.json that is no trial is left out (rlsql check lists it).
-- grain: run, trial_name
-- column: run: the run: its folder's name
-- column: trial_name: the trial's unique name, `<task>__<7-character id>`
-- column: trial_duration: the whole trial's seconds, where the run's CSV has no such column
-- column: environment_setup_duration: seconds to set up the sandbox environment, where the CSV has no such column
-- column: agent_setup_duration: seconds to set up the agent, where the CSV has no such column
-- column: agent_execution_duration: seconds the agent ran, where the CSV has no such column
-- column: verifier_duration: seconds the verifier ran, where the CSV has no such column
-- column: exception_message: the exception's message
-- column: started_at: when the trial started, UTC
-- column: finished_at: when the trial finished, UTC
SELECT
    run,
    trial_name,
    f.trial_duration AS trial_duration,
    f.environment_setup_duration AS environment_setup_duration,
    f.agent_setup_duration AS agent_setup_duration,
    f.agent_execution_duration AS agent_execution_duration,
    f.verifier_duration AS verifier_duration,
    f.exception_message AS exception_message,
    -- the stamps as trial_rows reads result.json's: with an offset as that instant in UTC, without one as written
    CASE
        WHEN regexp_matches(f.started_at, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN timezone('UTC', try_cast(f.started_at AS TIMESTAMPTZ))
        ELSE try_cast(f.started_at AS TIMESTAMP)
    END AS started_at,
    CASE
        WHEN regexp_matches(f.finished_at, '[T ][0-9:.]+([Zz]|[+-][0-9:]+)$')
            THEN timezone('UTC', try_cast(f.finished_at AS TIMESTAMPTZ))
        ELSE try_cast(f.finished_at AS TIMESTAMP)
    END AS finished_at
-- a subquery, not a CTE: DuckDB drops a LEFT JOIN to rows grouped by its key when no column of them is used
-- (and with it the read of the files), which it does not through a CTE
FROM (
    -- one struct per trial: arg_min of a column alone would skip a NULL for the next file's value
    SELECT
        run,
        trial_name,
        arg_min({
            'trial_duration': trial_duration, 'environment_setup_duration': environment_setup_duration,
            'agent_setup_duration': agent_setup_duration, 'agent_execution_duration': agent_execution_duration,
            'verifier_duration': verifier_duration, 'exception_message': exception_message,
            'started_at': started_at, 'finished_at': finished_at
        }, row_no) AS f
    FROM harbor_fill_src
    WHERE problem IS NULL AND trial_name IS NOT NULL
    GROUP BY run, trial_name
) AS first_files
