-- name: rolling_mean
-- version: 1
-- description: Table macro rolling_mean(table_name, span := 5): over any table or view with columns (series, x, value), returns series, x, value and rolling_mean, the mean of the non-NULL values among the last `span` rows of the series ordered by x (fewer at the start).
CREATE OR REPLACE MACRO rolling_mean(tbl, span := 5) AS TABLE
    SELECT
        series,
        x,
        value,
        avg(value) OVER (PARTITION BY series ORDER BY x ROWS BETWEEN span - 1 PRECEDING AND CURRENT ROW)
            AS rolling_mean
    FROM query_table(tbl)
    ORDER BY series, x
