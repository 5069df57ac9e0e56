-- name: looping_trials
-- version: 1
-- description: Trials that repeat themselves: each call (the same function with the same canonical arguments)
--   a trial's agent made at least `min_repeats` times over all its segments, with the trial's outcome, exception
--   and turns (from the trials view), how many times, and the turns of the first and the last. Copied-context
--   steps are left out. Ordered by run, repeats descending, trial_name, function_name, arguments.
-- param: min_repeats INTEGER = 3, min 2: how many times the same call must be made to count
-- grain: run, trial_name, function_name, arguments
-- column: run: the run: its folder's name
-- column: trial_name: the trial folder's name
-- column: outcome: Success (reward > 0), Failure (reward = 0) or No reward (no reward, or no trials row)
-- column: exception_type: the exception that ended the trial, `No exception` without one, NULL without a trials row
-- column: n_episodes: the trial's turns as the trials view gives them (NULL without a trials row)
-- column: function_name: the tool called
-- column: arguments: its arguments as canonical JSON text (keys sorted at every depth)
-- column: repeats: how many times the trial's agent made this call
-- column: first_turn: the turn of the first of them (by segment, step_id, call_index)
-- column: last_turn: the turn of the last of them
WITH calls AS (
    SELECT run, trial_name, function_name, arguments, turn
    FROM tool_call_arguments
    WHERE turn IS NOT NULL  -- agent steps that are not copied context
),
repeated AS (
    SELECT
        run, trial_name, function_name, arguments,
        count(*) AS repeats,
        -- a trial's turns grow with (segment, step_id): the first call's turn is the least, the last's the greatest
        min(turn) AS first_turn,
        max(turn) AS last_turn
    FROM calls
    GROUP BY run, trial_name, function_name, arguments
    HAVING count(*) >= {{ param('min_repeats') }}
)
SELECT
    r.run,
    r.trial_name,
    coalesce(t.outcome, 'No reward') AS outcome,
    t.exception_type,
    t.n_episodes,
    r.function_name,
    r.arguments,
    r.repeats,
    r.first_turn,
    r.last_turn
FROM repeated AS r
LEFT JOIN trial_rows AS t ON t.run = r.run AND t.trial_name = r.trial_name
ORDER BY r.run, r.repeats DESC, r.trial_name, r.function_name, r.arguments
