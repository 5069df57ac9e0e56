-- name: turn_histogram
-- version: 2
-- description: How many trials took each number of agent turns, per run: run, turns (n_episodes), trials, and
--   share (of the run's trials with turns, so that runs of different sizes compare), over the trials with
--   turns, turns ascending (counts of zero are not listed).
-- grain: run, turns
-- column: run: the run: its folder's name
-- column: turns: a number of agent turns (n_episodes)
-- column: trials: trials that took exactly that many turns
-- column: share: trials over the run's trials with turns (0-1)
SELECT run, n_episodes AS turns, count(*) AS trials, count(*) / sum(count(*)) OVER (PARTITION BY run) AS share
FROM trial_rows
WHERE n_episodes IS NOT NULL
GROUP BY run, n_episodes
ORDER BY run, turns
