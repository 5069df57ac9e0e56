-- name: ema
-- version: 1
-- description: Table macro ema(table_name, span := 5): over any table or view with columns (series, x, value), returns series, x, value and ema, the EMA of value along x within each series (alpha = 2/(span+1), seeded with the first value, NULL values are skipped and get a NULL ema). Example: SELECT * FROM ema('my_points', span := 10).
CREATE OR REPLACE MACRO ema(tbl, span := 5) AS TABLE
    SELECT
        series,
        x,
        value,
        CASE WHEN value IS NOT NULL THEN
            ema_last(
                -- the NULL values are a partition of their own, so the frame counts values only
                list(value ORDER BY x) OVER (
                    PARTITION BY series, value IS NULL ORDER BY x
                    ROWS BETWEEN ema_depth(span) PRECEDING AND CURRENT ROW
                ),
                span
            )
        END AS ema
    FROM query_table(tbl)
    ORDER BY series, x
