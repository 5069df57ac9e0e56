-- name: tool_call_arguments
-- version: 1
-- description: One row per tool call of every trial's agent trajectory, as tool_calls has them but without the
--   observations: the step it belongs to, its turn, the call's position, id, function and arguments as canonical
--   JSON text (tool_calls.arguments). Read with the observations parsed past (tool_call_arguments_src): a query
--   that compares calls without their answers (looping_trials) costs about a fifth less CPU. Ordered by run,
--   trial_name, segment, step_id, call_index.
-- grain: run, trial_name, segment, step_id, call_index
-- column: run: the run: its folder's name
-- column: trial_name: the trial folder's name (the trials view's trial_name)
-- column: segment: 0 for trajectory.json, N for trajectory.cont-N.json
-- column: step_id: the step_id of the step that made the call
-- column: turn: the agent turn of that step (trajectory_steps.turn), NULL for a copied step
-- column: call_index: 0-based position of the call in the step's tool_calls
-- column: tool_call_id: the call's tool_call_id, as written
-- column: function_name: the tool called, as written
-- column: arguments: the arguments object as canonical JSON text (tool_calls.arguments)
-- column: copied: true when the step that made the call is copied context
SELECT run, trial_name, segment, step_id, turn, call_index, tool_call_id, function_name, arguments, copied
FROM tool_call_arguments_src
ORDER BY run, trial_name, segment, step_id, step_index, call_index
