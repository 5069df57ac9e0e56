-- name: baseline_run
-- version: 1
-- description: The run the others are compared with (task_diff, run_diff): the run the `baseline` parameter
--   names, else the first run by name. No row when `baseline` names none of the runs given.
-- param: baseline VARCHAR = NULL: the run to compare the others with (default: the first run by name)
-- grain: run
-- column: run: the baseline run: its folder's name
SELECT run
FROM runs
WHERE run = coalesce({{ param('baseline') }}, (SELECT min(run) FROM runs))
