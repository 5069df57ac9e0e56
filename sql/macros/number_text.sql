-- name: number_text
-- version: 1
-- description: number_text(x): x as text with at most 4 decimals and no trailing zeros: number_text(5.0) = '5',
--   number_text(0.83444) = '0.8344', NULL for NULL (see fixed_text).
CREATE OR REPLACE MACRO number_text(x) AS
    regexp_replace(fixed_text(x, 4), '\.?0+$', '')
