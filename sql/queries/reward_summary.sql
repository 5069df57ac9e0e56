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
    coalesce(t.trials, 0) AS trials,
    coalesce(t.trials_with_reward, 0) AS trials_with_reward,
    t.mean_reward,
    t.success_rate,
    coalesce(t.trials_with_turns, 0) AS trials_with_turns
-- every run with trials (a CSV, or Harbor's result.json files) has a row, even without a usable trial
FROM (SELECT DISTINCT run FROM run_files WHERE artifact IN ('trials', 'harbor')) AS f
-- aggregate first, join the few runs after: count(*), not count(row_no), so no row numbering is computed
LEFT JOIN (
    SELECT
        run,
        count(*) AS trials,
        count(reward) AS trials_with_reward,
        avg(reward) AS mean_reward,
        avg(CASE WHEN reward > 0 THEN 1.0 WHEN reward IS NOT NULL THEN 0.0 END) AS success_rate,
        count(n_episodes) AS trials_with_turns
    FROM trial_rows
    GROUP BY run
) AS t ON t.run = f.run
ORDER BY f.run
