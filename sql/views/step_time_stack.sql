-- name: step_time_stack
-- version: 1
-- description: Where each deduplicated step's time went, for a stacked chart: run, step, span (each recorded
--   direct child of step in the span tree, then `unattributed` for the step time no child covers when
--   positive), seconds, step_seconds (timing/step of that row).
-- grain: run, step, span
-- column: run: the run: its folder's name
-- column: step: a deduplicated training step
-- column: span: a recorded direct child of step, or `unattributed` for the step time no child covers
-- column: seconds: seconds of that span in the step's row
-- column: step_seconds: timing/step of that row
WITH
    children AS (
        SELECT s.run, s.step, s.row_no, t.span, x.seconds
        FROM steps AS s
        JOIN span_tree AS t ON t.run = s.run AND t.parent = 'step'
        JOIN span_seconds AS x ON x.run = s.run AND x.row_no = s.row_no AND x.span = t.span
    ),
    totals AS (
        SELECT s.run, s.step, s.row_no, s."timing/step" AS step_seconds
        FROM steps AS s
    ),
    residual AS (
        SELECT t.run, t.step, 'unattributed' AS span, t.step_seconds - coalesce(sum(c.seconds), 0) AS seconds
        FROM totals AS t
        LEFT JOIN children AS c ON c.run = t.run AND c.row_no = t.row_no
        WHERE t.step_seconds IS NOT NULL
        GROUP BY t.run, t.step, t.step_seconds
    )
SELECT u.run, u.step, u.span, u.seconds, t.step_seconds
FROM (
    SELECT run, step, span, seconds, 0 AS part FROM children
    UNION ALL
    SELECT run, step, span, seconds, 1 AS part FROM residual WHERE seconds > 0
) AS u
JOIN totals AS t ON t.run = u.run AND t.step = u.step
ORDER BY u.run, u.step, u.part, u.span
