-- name: ema_depth
-- version: 1
-- description: ema_depth(span): how many values before the current one an EMA with alpha = 2/(span+1) reads: the values older than these weigh (1-alpha)^depth < 2^-60 of the result together, below a double's precision, so the EMA over the last depth+1 values equals the EMA over all of them (103 for span 5, 2,080 for span 100). A window frame `ROWS BETWEEN ema_depth(span) PRECEDING AND CURRENT ROW` keeps an EMA's memory linear in the steps (an unbounded frame holds every step's history: quadratic). 2^62 (every value) when the weights do not decay (span <= 0).
CREATE OR REPLACE MACRO ema_depth(span) AS
    CASE
        WHEN abs(1 - 2.0 / (span + 1)) = 0 THEN 0
        WHEN abs(1 - 2.0 / (span + 1)) < 1 THEN CAST(ceil(-60 * ln(2) / ln(abs(1 - 2.0 / (span + 1)))) AS BIGINT)
        ELSE 4611686018427387904
    END
