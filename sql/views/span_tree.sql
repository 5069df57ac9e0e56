-- name: span_tree
-- version: 1
-- description: Each run's recorded timing spans placed in the declared tree: run, span, parent (the nearest
--   recorded declared ancestor, NULL for a root), region (step, outside, or undeclared).
-- grain: run, span
-- column: run: the run: its folder's name
-- column: span: a timing span the run recorded
-- column: parent: its nearest recorded declared ancestor, NULL for a root
-- column: region: step (inside a training step), outside (between steps) or undeclared
WITH RECURSIVE
    ancestors(span, ancestor, depth) AS (
        SELECT span, parent, 1 FROM timing_spans WHERE parent IS NOT NULL
        UNION ALL
        SELECT a.span, d.parent, a.depth + 1
        FROM ancestors AS a
        JOIN timing_spans AS d ON d.span = a.ancestor
        WHERE d.parent IS NOT NULL
    ),
    recorded AS (
        SELECT DISTINCT run, span FROM span_seconds
    )
SELECT
    r.run,
    r.span,
    arg_min(up.span, a.depth) FILTER (WHERE up.span IS NOT NULL) AS parent,
    coalesce(any_value(d.region), 'undeclared') AS region
FROM recorded AS r
LEFT JOIN timing_spans AS d ON d.span = r.span
LEFT JOIN ancestors AS a ON a.span = r.span
LEFT JOIN recorded AS up ON up.run = r.run AND up.span = a.ancestor
GROUP BY r.run, r.span
