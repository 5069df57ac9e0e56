-- The trial page: one trial's row of the trials view.
SELECT * FROM trials WHERE run = $run AND trial_name = $trial
