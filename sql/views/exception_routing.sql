-- name: exception_routing
-- version: 1
-- description: How each run's trainer routes a failed trial by its exact exception name: passthrough, mask
--   and zero lists and the default treatment, from rl_config.yaml wherever the keys sit (first match in
--   document order), each absent key taking the trainer's default.
-- grain: run
-- column: run: the run: its folder's name
-- column: passthrough_exceptions: exception names trained as if nothing failed (config, else the trainer's
--   default: none)
-- column: mask_exceptions: exception names scored 0 and left out of the baseline (config, else the trainer's
--   default list)
-- column: zero_exceptions: exception names scored 0 and counted in the baseline (config, else the trainer's
--   default list)
-- column: default_error_treatment: the treatment of any other exception: zero, mask or passthrough (default
--   zero)
-- column: from_config: true when the run has an rl_config.yaml with values to search, false when every key is
--   the default
WITH
    leaves AS (
        SELECT run, ordinal, regexp_extract(key, '[^.]+$') AS leaf, value, value_json
        FROM config
        WHERE value_json IS NOT NULL AND value_json <> 'null'
    ),
    picked AS (
        SELECT
            run,
            arg_min(value_json, ordinal) FILTER (WHERE leaf = 'passthrough_exceptions') AS passthrough_json,
            arg_min(value_json, ordinal) FILTER (WHERE leaf = 'mask_exceptions') AS mask_json,
            arg_min(value_json, ordinal) FILTER (WHERE leaf = 'zero_exceptions') AS zero_json,
            arg_min(value, ordinal) FILTER (WHERE leaf = 'default_error_treatment') AS default_text
        FROM leaves
        GROUP BY run
    )
SELECT
    r.run,
    coalesce(CASE WHEN json_type(p.passthrough_json) = 'ARRAY' THEN CAST(json(p.passthrough_json) AS VARCHAR[]) END, CAST([] AS VARCHAR[])) AS passthrough_exceptions,
    coalesce(
        CASE WHEN json_type(p.mask_json) = 'ARRAY' THEN CAST(json(p.mask_json) AS VARCHAR[]) END,
        ['DaytonaError', 'EnvironmentStartTimeoutError', 'NetworkError', 'ConnectionError',
         'RewardFileNotFoundError', 'RewardFileEmptyError']
    ) AS mask_exceptions,
    coalesce(CASE WHEN json_type(p.zero_json) = 'ARRAY' THEN CAST(json(p.zero_json) AS VARCHAR[]) END, ['AgentTimeoutError', 'ContextLengthExceededError']) AS zero_exceptions,
    CASE WHEN lower(p.default_text) IN ('zero', 'mask', 'passthrough') THEN lower(p.default_text) ELSE 'zero' END
        AS default_error_treatment,
    p.run IS NOT NULL AS from_config
FROM runs AS r
LEFT JOIN picked AS p ON p.run = r.run
