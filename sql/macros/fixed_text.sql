-- name: fixed_text
-- version: 1
-- description: fixed_text(x, places): x as text with `places` decimals (0 to 9), rounded half away from zero:
--   fixed_text(6.25, 1) = '6.3', fixed_text(14.2, 0) = '14', NULL for NULL. Written with arithmetic, not printf, so
--   that DuckDB and Spark write the same text.
CREATE OR REPLACE MACRO fixed_text(x, places) AS
    CASE
        WHEN x IS NULL THEN NULL
        WHEN places = 0 THEN CAST(CAST(round(x) AS BIGINT) AS VARCHAR)
        ELSE
            CASE WHEN round(x * power(10, places)) < 0 THEN '-' ELSE '' END
            || CAST(CAST(floor(abs(round(x * power(10, places))) / power(10, places)) AS BIGINT) AS VARCHAR)
            || '.'
            || lpad(CAST(CAST(abs(round(x * power(10, places))) % power(10, places) AS BIGINT) AS VARCHAR), places, '0')
    END
