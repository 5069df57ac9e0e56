-- name: tool_call_arguments_src
-- version: 1
-- description: tool_calls_src without the observations: every tool call of every trial's agent trajectory with
--   its step, turn, position, id, function and canonical arguments, read from files whose observations are
--   parsed past (their content is most of a file's bytes, and about a fifth of tool_calls_src's CPU), or from
--   tool_calls_src's cached copy. For the queries that compare calls without their answers (looping_trials).
-- artifact: trajectories
{%- set observations = false %}
{%- include "sources/_tool_calls.sql.j2" %}
