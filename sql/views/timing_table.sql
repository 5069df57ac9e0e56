-- name: timing_table
-- version: 1
-- description: timing_breakdown with share_of_step beside share_of_within: for every span the mean over the
--   rows where step ran (and took time) of the span's seconds over the step's (a row without the span counts
--   0), for spans nested in step and outside it alike (an outside span's share can pass 1), unattributed
--   takes its share_of_within (its parent is step), overlap has none.
-- grain: run, span
-- column: run: the run: its folder's name
-- column: span: a timing span, `unattributed` or `overlap`
-- column: within: its parent span: `-` for step, `outside step`, `not declared`
-- column: mean_seconds: mean seconds over the rows where it ran
-- column: share_of_within: mean over all rows of span/parent (0 where it did not run), NULL without a parent
-- column: share_of_step: mean over the rows where step ran of span/step (an outside span's can pass 1), NULL
--   for overlap
-- column: steps: metric rows where it ran
WITH
    shares AS (
        SELECT t.run, t.span, avg(coalesce(x.seconds, 0) / st.seconds) AS share_of_step
        FROM span_tree AS t
        JOIN span_seconds AS st ON st.run = t.run AND st.span = 'step' AND st.seconds > 0
        LEFT JOIN span_seconds AS x ON x.run = t.run AND x.row_no = st.row_no AND x.span = t.span
        WHERE t.span <> 'step'
        GROUP BY t.run, t.span
    )
SELECT
    b.run,
    b.span,
    b.within,
    b.mean_seconds,
    b.share_of_within,
    CASE WHEN b.span = 'step' THEN 1.0
         WHEN b.span = 'unattributed' AND b.within = 'step' THEN b.share_of_within
         ELSE s.share_of_step END AS share_of_step,
    b.steps
FROM timing_breakdown AS b
LEFT JOIN shares AS s ON s.run = b.run AND s.span = b.span AND b.span NOT IN ('unattributed', 'overlap')
