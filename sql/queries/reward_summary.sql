-- name: reward_summary
-- version: 1
-- description: Verifier rewards per run: all trials, trials with a reward, their mean reward, success rate
--   (share with reward > 0, 0-1) and trials with turns.
-- grain: run
-- column: run: the run: its folder's name
-- column: trials: all trials
-- column: trials_with_reward: trials with a reward
-- column: mean_reward: mean reward over trials with one
-- column: success_rate: share (0-1) of trials with a reward whose reward > 0
-- column: trials_with_turns: trials with a turn count (n_episodes)
SELECT
    f.run,
    count(t.row_no) AS trials,
    count(t.reward) AS trials_with_reward,
    avg(t.reward) AS mean_reward,
    avg(CASE WHEN t.reward > 0 THEN 1.0 WHEN t.reward IS NOT NULL THEN 0.0 END) AS success_rate,
    count(t.n_episodes) AS trials_with_turns
-- every run with trials (a CSV, or Harbor's result.json files) has a row, even without a usable trial
FROM (SELECT DISTINCT run FROM run_files WHERE artifact IN ('trials', 'harbor')) AS f
LEFT JOIN trial_rows AS t ON t.run = f.run
GROUP BY f.run
ORDER BY f.run
