-- name: log_factorial
-- version: 1
-- description: log_factorial(n): ln(n!) for a whole n >= 0, as a double (lgamma(n + 1) to about 1e-13), written with only arithmetic, ln and pow so that Spark, which has no lgamma, inlines it too: Stirling's series for ln((n+8)!) = lnGamma(z), z = n + 9, to the z^-9 term, less ln((n+1)(n+2)...(n+8)).
CREATE OR REPLACE MACRO log_factorial(n) AS
    (CAST(n AS DOUBLE) + 8.5) * ln(CAST(n AS DOUBLE) + 9) - (CAST(n AS DOUBLE) + 9) + 0.9189385332046728
    + 1 / (12 * (CAST(n AS DOUBLE) + 9))
    - 1 / (360 * pow(CAST(n AS DOUBLE) + 9, 3))
    + 1 / (1260 * pow(CAST(n AS DOUBLE) + 9, 5))
    - 1 / (1680 * pow(CAST(n AS DOUBLE) + 9, 7))
    + 1 / (1188 * pow(CAST(n AS DOUBLE) + 9, 9))
    - ln((CAST(n AS DOUBLE) + 1) * (CAST(n AS DOUBLE) + 2) * (CAST(n AS DOUBLE) + 3) * (CAST(n AS DOUBLE) + 4)
         * (CAST(n AS DOUBLE) + 5) * (CAST(n AS DOUBLE) + 6) * (CAST(n AS DOUBLE) + 7) * (CAST(n AS DOUBLE) + 8))
