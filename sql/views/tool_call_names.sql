-- name: tool_call_names
-- version: 1
-- description: One row per tool call of every trial's agent trajectory, as tool_calls has them but only their
--   position and function: the step it belongs to, the call's position in the step's tool_calls, the function
--   called and whether the step is copied context. Read with the steps (trajectory_steps_src), without the
--   arguments' canonical text and the observations tool_calls computes: a query that only counts calls (tool_usage)
--   costs half as much. Ordered by run, trial_name, segment, step_id, call_index.
-- grain: run, trial_name, segment, step_id, call_index
-- column: run: the run: its folder's name
-- column: trial_name: the trial folder's name (the trials view's trial_name)
-- column: segment: 0 for trajectory.json, N for trajectory.cont-N.json
-- column: step_id: the step_id of the step that made the call
-- column: call_index: 0-based position of the call in the step's tool_calls
-- column: function_name: the tool called, as written (tool_calls.function_name)
-- column: copied: true when the step that made the call is copied context
SELECT run, trial_name, segment, step_id, c.call_index AS call_index, c.function_name AS function_name, copied
FROM (
    SELECT run, trial_name, segment, step_id, step_index, copied, unnest(calls) AS c
    FROM trajectory_steps_src
    WHERE problem IS NULL
)
ORDER BY run, trial_name, segment, step_id, step_index, call_index
