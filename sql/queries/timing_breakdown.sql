-- name: timing_breakdown
-- version: 1
-- description: Where a training step's time goes, as a containment tree over every metric row: per span its
--   mean seconds over the rows where it ran and its mean share of its parent (a row without the span counts
--   0), depth-first from step (largest first), then the step time no child covers (unattributed, or overlap
--   when children sum past the step), then spans outside the step, then undeclared spans.
-- grain: run, span
-- column: run: the run: its folder's name
-- column: span: a timing span, `unattributed` or `overlap`
-- column: within: its parent span: `-` for step, `outside step`, `not declared`
-- column: mean_seconds: mean seconds over the rows where it ran
-- column: share_of_within: mean over all rows of span/parent (0 where it did not run), NULL without a parent
-- column: steps: metric rows where it ran
WITH RECURSIVE
    stats AS (
        SELECT run, span, avg(seconds) AS mean_seconds, count(*) AS steps
        FROM span_seconds
        GROUP BY run, span
    ),
    grid AS (
        -- every metric row x every recorded span with a parent: the span's and the parent's seconds
        SELECT t.run, t.span, m.row_no, s.seconds, p.seconds AS parent_seconds
        FROM span_tree AS t
        JOIN metric_rows AS m ON m.run = t.run
        LEFT JOIN span_seconds AS s ON s.run = t.run AND s.row_no = m.row_no AND s.span = t.span
        LEFT JOIN span_seconds AS p ON p.run = t.run AND p.row_no = m.row_no AND p.span = t.parent
        WHERE t.parent IS NOT NULL
    ),
    shares AS (
        SELECT run, span, avg(coalesce(seconds, 0) / parent_seconds) FILTER (WHERE parent_seconds > 0) AS share
        FROM grid
        GROUP BY run, span
    ),
    nodes AS (
        SELECT
            t.run,
            t.span,
            t.parent,
            CASE WHEN t.parent IS NOT NULL THEN t.parent
                 WHEN t.region = 'step' THEN '-'
                 WHEN t.region = 'outside' THEN 'outside step'
                 ELSE 'not declared' END AS within,
            CASE WHEN t.parent IS NOT NULL THEN NULL
                 WHEN t.region = 'step' THEN 0
                 WHEN t.region = 'outside' THEN 2
                 ELSE 3 END AS section,
            st.mean_seconds,
            sh.share AS share_of_within,
            st.steps
        FROM span_tree AS t
        JOIN stats AS st ON st.run = t.run AND st.span = t.span
        LEFT JOIN shares AS sh ON sh.run = t.run AND sh.span = t.span
    ),
    ranked AS (
        SELECT *, row_number() OVER (
            PARTITION BY run, coalesce(parent, ''), section ORDER BY mean_seconds DESC, span
        ) AS sibling_rank
        FROM nodes
    ),
    ordered AS (
        SELECT run, span, [section, sibling_rank] AS path FROM ranked WHERE parent IS NULL
        UNION ALL
        SELECT c.run, c.span, list_append(o.path, c.sibling_rank)
        FROM ordered AS o
        JOIN ranked AS c ON c.run = o.run AND c.parent = o.span
    ),
    residuals AS (
        -- per row where step ran: step seconds its direct children do not cover
        SELECT
            st.run,
            st.seconds - coalesce(sum(c.seconds), 0) AS residual,
            (st.seconds - coalesce(sum(c.seconds), 0)) / nullif(st.seconds, 0) AS residual_share
        FROM span_seconds AS st
        LEFT JOIN span_tree AS t ON t.run = st.run AND t.parent = 'step'
        LEFT JOIN span_seconds AS c ON c.run = st.run AND c.row_no = st.row_no AND c.span = t.span
        WHERE st.span = 'step'
        GROUP BY st.run, st.row_no, st.seconds
    ),
    remainder AS (
        SELECT
            run,
            CASE WHEN avg(residual) >= 0 THEN 'unattributed' ELSE 'overlap' END AS span,
            'step' AS within,
            abs(avg(residual)) AS mean_seconds,
            CASE WHEN avg(residual) >= 0 THEN avg(residual_share) END AS share_of_within,
            count(*) AS steps,
            [1] AS path
        FROM residuals
        GROUP BY run
    )
SELECT run, span, within, mean_seconds, share_of_within, steps
FROM (
    SELECT r.run, r.span, r.within, r.mean_seconds, r.share_of_within, r.steps, o.path
    FROM ranked AS r
    JOIN ordered AS o ON o.run = r.run AND o.span = r.span
    UNION ALL
    SELECT run, span, within, mean_seconds, share_of_within, steps, path
    FROM remainder
)
ORDER BY run, path
