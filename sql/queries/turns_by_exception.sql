-- name: turns_by_exception
-- version: 1
-- description: Agent turns per exception type over trials with turns (`No exception` for a clean trial):
--   trials, mean and median turns, highest mean first.
-- grain: run, exception_type
-- column: run: the run: its folder's name
-- column: exception_type: the exception that ended the trial (Python class name), `No exception` when none
-- column: trials: trials with a turn count (n_episodes)
-- column: mean_turns: mean turns
-- column: median_turns: median turns
-- the median from counts per distinct turn value: sql/queries/_turn_median.sql.j2
{%- from "queries/_turn_median.sql.j2" import turn_median_ctes %}
WITH{{ turn_median_ctes('exception_type', drop_null_key=False) }}
SELECT
    run,
    exception_type,
    trials,
    mean_turns,
    (lo + hi) / 2.0 AS median_turns
FROM groups
ORDER BY run, mean_turns DESC, exception_type
