-- name: checkpoint_settings
-- version: 2
-- description: The checkpoint interval per run with trainer metrics: save_every = the save_every parameter,
--   else the config's trainer.hf_save_interval, else 20 (the parser's default).
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps
--   (default: the run's trainer.hf_save_interval, else 20)
-- grain: run
-- column: run: the run: its folder's name
-- column: save_every: checkpoint interval in steps: the parameter, else trainer.hf_save_interval, else 20
WITH configured AS (
    -- a whole number only: TRY_CAST alone would round 2.5 to 3 (rlsql/runs/config.py warns about the rest)
    SELECT run, arg_min(
        CASE WHEN TRY_CAST(value AS DOUBLE) = TRY_CAST(value AS INTEGER) THEN TRY_CAST(value AS INTEGER) END,
        ordinal) AS hf_save_interval
    FROM config
    WHERE key = 'trainer.hf_save_interval'
    GROUP BY run
)
SELECT
    f.run,
    coalesce(
        {{ param('save_every') }},
        CASE WHEN c.hf_save_interval >= 1 THEN c.hf_save_interval END,
        20
    ) AS save_every
FROM run_files AS f
LEFT JOIN configured AS c ON c.run = f.run
WHERE f.artifact = 'metrics'
