-- The trials page: one run's trials, filtered. Every filter is a bound parameter; NULL leaves it off.
-- outcome is the trials view's outcome, or `No reward` for a trial without one.
SELECT *
FROM trials
WHERE run = $run
  AND (CAST($outcome AS VARCHAR) IS NULL OR coalesce(outcome, 'No reward') = $outcome)
  AND (CAST($exception AS VARCHAR) IS NULL OR exception_type = $exception)
  AND (CAST($turns_min AS BIGINT) IS NULL OR n_episodes >= CAST($turns_min AS BIGINT))
  AND (CAST($turns_max AS BIGINT) IS NULL OR n_episodes <= CAST($turns_max AS BIGINT))
  AND (CAST($task AS VARCHAR) IS NULL OR contains(task_name, $task))
