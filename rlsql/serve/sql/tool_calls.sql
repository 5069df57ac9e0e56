-- The trial page's transcript: the trial's tool calls (the tool_calls view, where the catalogue has it).
SELECT * FROM tool_calls WHERE run = $run AND trial_name = $trial ORDER BY segment, step_id, call_index
