-- name: step_timing
-- version: 1
-- description: Seconds of every recorded timing span in every metric row (a re-run step appears once per
--   log), with its share of that row's timing/step.
-- grain: run, log_file, step, span
-- column: run: the run: its folder's name
-- column: step: the training step (trainer/global_step, else global_step)
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: span: a timing span recorded in that row (timing/ prefix dropped)
-- column: seconds: seconds of the span
-- column: share_of_step: seconds / timing/step of that row (1.0 for step itself)
SELECT
    s.run,
    s.step,
    s.log_file,
    s.span,
    s.seconds,
    s.seconds / nullif(total.seconds, 0) AS share_of_step
FROM span_seconds AS s
LEFT JOIN span_seconds AS total ON total.run = s.run AND total.row_no = s.row_no AND total.span = 'step'
ORDER BY s.run, s.step, s.log_file, s.span
