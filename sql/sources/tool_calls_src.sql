-- name: tool_calls_src
-- version: 1
-- description: Every tool call of every trial's agent trajectory (ATIF), read in place: one row per element of
--   a step's `tool_calls` in `trace_jobs/<trial>/agent/trajectory.json` and `trajectory.cont-N.json`, with the
--   step's segment, step_id, position in its file (step_index), turn and copied flag, the call's position
--   (call_index), tool_call_id, function_name, its arguments as canonical JSON text (keys sorted at every
--   depth, no spaces, non-ASCII kept: Python's json.dumps(a, sort_keys=True, separators=(",", ":"),
--   ensure_ascii=False)) and the characters of the step's observation results whose source_call_id is the
--   call's id. Damaged files have no rows here (trajectory_steps_src names them). Arguments whose objects and
--   arrays nest more than 100 deep are NULL, with a warning naming the file.
-- artifact: trajectories
{%- set observations = true %}
{%- include "sources/_tool_calls.sql.j2" %}
