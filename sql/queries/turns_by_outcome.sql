-- name: turns_by_outcome
-- version: 1
-- description: Agent turns by outcome over trials with both turns and a reward: Success (reward > 0) first,
--   then Failure (reward = 0), a negative reward is neither.
-- grain: run, outcome
-- column: run: the run: its folder's name
-- column: outcome: Success (reward > 0) or Failure (reward = 0)
-- column: trials: trials with turns and a reward
-- column: mean_turns: mean turns
-- column: median_turns: median turns
-- the median from counts per distinct turn value: sql/queries/_turn_median.sql.j2
{%- from "queries/_turn_median.sql.j2" import turn_median_ctes %}
WITH{{ turn_median_ctes('outcome', drop_null_key=True) }}
SELECT
    run,
    outcome,
    trials,
    mean_turns,
    (lo + hi) / 2.0 AS median_turns
FROM groups
ORDER BY run, outcome = 'Failure', outcome
