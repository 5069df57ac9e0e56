-- name: ema_last
-- version: 1
-- description: ema_last(values, span): the exponential moving average after the last of an ordered list of values, alpha = 2/(span+1), seeded with the first value (EMA_1 = v_1, EMA_n = alpha*v_n + (1-alpha)*EMA_(n-1)). NULL for an empty list.
CREATE OR REPLACE MACRO ema_last(vals, span) AS
    CASE WHEN len(vals) > 0 THEN
        list_reduce(vals, lambda acc, x: (2.0 / (span + 1)) * x + (1 - 2.0 / (span + 1)) * acc)
    END
