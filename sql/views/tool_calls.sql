-- name: tool_calls
-- version: 1
-- description: One row per tool call of every trial's agent trajectory (the step's `tool_calls`, in every
--   segment): the step it belongs to, the call's position, its id, function and arguments as canonical JSON
--   text (keys sorted at every depth, no spaces, non-ASCII kept, as Python's json.dumps(a, sort_keys=True,
--   separators=(",", ":"), ensure_ascii=False): two calls whose arguments differ only in key order have the same
--   text), the characters of the observation it got, and whether the step is copied context. Ordered by run,
--   trial_name, segment, step_id, call_index.
-- grain: run, trial_name, segment, step_id, call_index
-- column: run: the run: its folder's name
-- column: trial_name: the trial folder's name (the trials view's trial_name)
-- column: segment: 0 for trajectory.json, N for trajectory.cont-N.json
-- column: step_id: the step_id of the step that made the call
-- column: turn: the agent turn of that step (trajectory_steps.turn), NULL for a copied step
-- column: call_index: 0-based position of the call in the step's tool_calls
-- column: tool_call_id: the call's tool_call_id, as written
-- column: function_name: the tool called, as written (terminus-2: bash_command, mark_task_complete)
-- column: arguments: the arguments object as canonical JSON text (keys sorted at every depth, `,` and `:` with no
--   spaces, non-ASCII kept)
-- column: observation_chars: characters of the step's observation results whose source_call_id is this call's
--   tool_call_id (string content: its length, parts: their text's lengths), 0 when none
-- column: copied: true when the step that made the call is copied context
SELECT run, trial_name, segment, step_id, turn, call_index, tool_call_id, function_name, arguments,
    observation_chars, copied
FROM tool_calls_src
ORDER BY run, trial_name, segment, step_id, step_index, call_index
