-- name: trials
-- version: 3
-- description: One row per Harbor trial, from the run's trials CSV, else from its trace_jobs/*/result.json:
--   run, row_no (CSV order, sorted trial folder names for result.json files), task and trial names,
--   n_episodes (turns), tokens, exception_type (`No exception` when empty), reward, outcome (Success: reward
--   > 0, Failure: reward = 0), durations, treatment (the route the config gives the exception type) and
--   effective_treatment (a passthrough trial without a reward is masked), then, read from result.json,
--   exception_message, started_at and finished_at: a run with both a CSV and trace_jobs takes those (and the
--   durations an older CSV lacks) from the result.json of the same trial_name (version 3, where version 2 left
--   them NULL).
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
-- column: treatment: the route the run's config gives the exception type: none, passthrough, mask or zero
-- column: effective_treatment: the treatment the trial really got: a passthrough trial without a reward is
--   masked
-- column: exception_message: the exception's message, from result.json (for a run with a trials CSV, the
--   file of the same trial_name, NULL without one)
-- column: started_at: when the trial started, UTC, from result.json (as exception_message)
-- column: finished_at: when the trial finished, UTC, from result.json (as exception_message)
{%- set filled = ["trial_duration", "environment_setup_duration", "agent_setup_duration", "agent_execution_duration",
                   "verifier_duration", "exception_message", "started_at", "finished_at"] %}
WITH
    routed AS (
        SELECT
            t.*,
            route_exception(t.exception_type, r) AS treatment,
            CASE
                WHEN treatment = 'passthrough' AND t.reward IS NULL THEN 'mask'
                ELSE treatment
            END AS effective_treatment
        FROM trial_rows AS t
        LEFT JOIN exception_routing AS r ON r.run = t.run
    )
-- the result.json fields of a run that also has a CSV, by trial_name: the last join, to rows grouped by its key,
-- so that DuckDB drops it, and the files' read, from a query of this view that reads none of them (and joins
-- nothing to it)
SELECT
    t.* EXCLUDE ({% for c in filled %}{{ ", " if not loop.first }}{{ c | ident }}{% endfor %},
                 treatment, effective_treatment),
    {%- for c in filled[:5] %}
    coalesce(t.{{ c | ident }}, f.{{ c | ident }}) AS {{ c | ident }},
    {%- endfor %}
    t.treatment,
    t.effective_treatment,
    {%- for c in filled[5:] %}
    coalesce(t.{{ c | ident }}, f.{{ c | ident }}) AS {{ c | ident }}{{ "," if not loop.last }}
    {%- endfor %}
FROM routed AS t
LEFT JOIN trial_fill AS f ON f.run = t.run AND f.trial_name = t.trial_name
