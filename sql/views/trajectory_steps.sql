-- name: trajectory_steps
-- version: 1
-- description: One row per step of every trial's agent trajectory (ATIF: `trace_jobs/<trial>/agent/trajectory.json`
--   is segment 0, `trajectory.cont-N.json` segment N), whether the run's trials come from a trials CSV or from
--   result.json files: who spoke (source), the agent's turn, when (UTC), the model, the message's and reasoning's
--   length in characters, the number of tool calls, the tokens and cost of the step, and whether it is context
--   copied from an earlier segment. Damaged files are left out (a warning names each, `rlsql check` lists
--   them). Ordered by run, trial_name, segment, step_id.
-- grain: run, trial_name, segment, step_id
-- column: run: the run: its folder's name
-- column: trial_name: the trial folder's name (the trials view's trial_name)
-- column: segment: 0 for trajectory.json, N for trajectory.cont-N.json (a continuation after a context summarisation)
-- column: step_id: the step's `step_id` (from 1 in each segment)
-- column: turn: 1-based ordinal of the step among the trial's agent steps that are not copied context, by
--   (segment, step_id), NULL for other steps
-- column: source: who wrote the step: system, user or agent
-- column: ts: the step's `timestamp` as UTC (an offset applied, none read as UTC), NULL when absent or not of
--   the form YYYY-MM-DD[(T| )HH:MM[:SS[.ffffff]][Z|+HH:MM|-HH:MM]]
-- column: model_name: the step's model_name, else its segment's agent.model_name
-- column: message_chars: characters (code points) of the message: a string's length, or the lengths of the text
--   of its parts of type text (an image counts 0)
-- column: reasoning_chars: characters of reasoning_content, 0 without one
-- column: tool_calls: how many tool calls the step made (0 for none)
-- column: prompt_tokens: the step's metrics.prompt_tokens (context tokens, cached ones included), NULL when
--   absent or not a whole number from 0 to 2**53
-- column: completion_tokens: the step's metrics.completion_tokens, NULL when absent or not a whole number from 0
--   to 2**53
-- column: cached_tokens: the step's metrics.cached_tokens (the part of prompt_tokens served from the cache),
--   NULL when absent or not a whole number from 0 to 2**53
-- column: cost_usd: the step's metrics.cost_usd, NULL when absent
-- column: copied: true for a step copied from an earlier segment for context (is_copied_context), else false
SELECT run, trial_name, segment, step_id, turn, source, ts, model_name, message_chars, reasoning_chars, tool_calls,
    prompt_tokens, completion_tokens, cached_tokens, cost_usd, copied
FROM trajectory_steps_src
WHERE problem IS NULL
ORDER BY run, trial_name, segment, step_id, step_index
