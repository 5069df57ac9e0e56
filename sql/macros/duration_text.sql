-- name: duration_text
-- version: 1
-- description: duration_text(seconds): a duration a person reads, from seconds rounded to the second: `4 h 31 m` from an
--   hour on (minutes cut, not rounded), `6 m 46 s` from a minute on, else `12.5 s` (one decimal), NULL for NULL.
CREATE OR REPLACE MACRO duration_text(seconds) AS
    CASE
        WHEN seconds IS NULL THEN NULL
        WHEN round(seconds) >= 3600 THEN printf(
            '%d h %d m', CAST(floor(round(seconds) / 3600) AS BIGINT), CAST(floor((round(seconds) % 3600) / 60) AS BIGINT))
        WHEN round(seconds) >= 60 THEN printf(
            '%d m %d s', CAST(floor(round(seconds) / 60) AS BIGINT), CAST(round(seconds) % 60 AS BIGINT))
        ELSE fixed_text(seconds, 1) || ' s'
    END
