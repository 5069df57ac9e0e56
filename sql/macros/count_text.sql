-- name: count_text
-- version: 1
-- description: count_text(n): a whole number with thousands separators, `45,711`, below a trillion (larger ones
--   without separators), NULL for NULL. Written with arithmetic so that DuckDB and Spark write the same text.
CREATE OR REPLACE MACRO count_text(n) AS
    CASE
        WHEN n IS NULL THEN NULL
        WHEN n < 0 OR n >= 1000000000000 THEN CAST(n AS VARCHAR)
        WHEN n < 1000 THEN CAST(n AS VARCHAR)
        WHEN n < 1000000 THEN CAST(CAST(floor(n / 1000) AS BIGINT) AS VARCHAR) || ','
            || lpad(CAST(n % 1000 AS VARCHAR), 3, '0')
        WHEN n < 1000000000 THEN CAST(CAST(floor(n / 1000000) AS BIGINT) AS VARCHAR) || ','
            || lpad(CAST(CAST(floor(n / 1000) AS BIGINT) % 1000 AS VARCHAR), 3, '0') || ','
            || lpad(CAST(n % 1000 AS VARCHAR), 3, '0')
        ELSE CAST(CAST(floor(n / 1000000000) AS BIGINT) AS VARCHAR) || ','
            || lpad(CAST(CAST(floor(n / 1000000) AS BIGINT) % 1000 AS VARCHAR), 3, '0') || ','
            || lpad(CAST(CAST(floor(n / 1000) AS BIGINT) % 1000 AS VARCHAR), 3, '0') || ','
            || lpad(CAST(n % 1000 AS VARCHAR), 3, '0')
    END
