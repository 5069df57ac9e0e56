-- name: metric_rows
-- version: 2
-- description: Every trainer metric row of every run, as logged (a re-run step appears once per log): run,
--   log_file, step (trainer/global_step, else global_step), row_no (CSV order), source_file, then every
--   metric column.
-- grain: run, row_no
-- column: run: the run: its folder's name
-- column: log_file: the trainer console log the row came from (e.g. job_554408)
-- column: step: the training step (trainer/global_step, else global_step)
-- column: row_no: the row's position in the run's metrics CSV (1 = first data row)
-- column: source_file: the metrics CSV the row was read from (absolute path)
-- column: *: a trainer metric as the CSV names it (family/name, e.g. reward/avg_raw_reward, timing/step in
--   seconds), NULL where the row has no value
SELECT
    run,
    log_file,
    CAST(coalesce("trainer/global_step", global_step) AS BIGINT) AS step,
    row_no,
    source_file,
    -- the counts every metrics source declares are whole numbers: BIGINT (pandas writes `12.0` for a column
    -- with a gap); the run's other metric columns keep the source's DOUBLE
    * EXCLUDE (run, log_file, row_no, source_file) REPLACE (
        CAST("trainer/global_step" AS BIGINT) AS "trainer/global_step",
        CAST(global_step AS BIGINT) AS global_step,
        CAST("async/discarded_count" AS BIGINT) AS "async/discarded_count"
    )
FROM metrics_src
