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
SELECT
    run,
    outcome,
    count(*) AS trials,
    avg(n_episodes) AS mean_turns,
    quantile_cont(n_episodes, 0.5) AS median_turns
FROM trial_rows
WHERE n_episodes IS NOT NULL AND outcome IS NOT NULL
GROUP BY run, outcome
ORDER BY run, outcome = 'Failure', outcome
