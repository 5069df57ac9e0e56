-- name: exception_treatment
-- version: 1
-- description: Trials per effective treatment (none, passthrough, mask, zero; a passthrough trial without a reward counts as mask) with their percent of the run's trials and the exception types routed there.
-- grain: run, treatment
SELECT
    run,
    effective_treatment AS treatment,
    count(*) AS trials,
    100.0 * count(*) / sum(count(*)) OVER (PARTITION BY run) AS pct,
    array_to_string(list_sort(list(DISTINCT exception_type)), ', ') AS exception_types
FROM trials
GROUP BY run, effective_treatment
ORDER BY run, list_position(['none', 'passthrough', 'mask', 'zero'], effective_treatment)
