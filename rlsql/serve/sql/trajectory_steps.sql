-- The trial page's transcript: the trial's steps (the trajectory_steps view, where the catalogue has it).
SELECT * FROM trajectory_steps WHERE run = $run AND trial_name = $trial ORDER BY segment, step_id
