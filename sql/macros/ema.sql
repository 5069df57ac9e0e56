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
                list(value ORDER BY x) FILTER (WHERE value IS NOT NULL) OVER (
                    PARTITION BY series ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
                ),
                span
            )
        END AS ema
    FROM query_table(tbl)
    ORDER BY series, x
