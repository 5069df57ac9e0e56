-- name: metrics_src
-- version: 2
-- description: Raw rows of each run's trainer metrics CSV (`*_metrics_table.csv` / `metrics.csv`), read in place: run, source_file, row_no (CSV order), then every column of the file (metrics as DOUBLE). A run without the CSV gives the same columns from its raw training logs (console metric blocks or WANDB_MIRROR lines, batch_errors/* from the batch lines; source_file = the log).
-- artifact: metrics
-- columns: log_file VARCHAR, trainer/global_step DOUBLE, global_step DOUBLE, reward/avg_raw_reward DOUBLE, timing/step DOUBLE, async/staleness_mean DOUBLE, async/staleness_max DOUBLE, async/discard_rate DOUBLE, async/discarded_count DOUBLE
-- other_columns: DOUBLE
{% include "sources/_read_csv.sql.j2" %}

{% include "sources/_metrics_log.sql.j2" %}
