-- name: run_table
-- version: 1
-- description: The cross-run table: one row per run with run_summary's headline figures and `config`, a MAP from rl_config.yaml key (dotted path) to the run's value (text; `null` for a YAML null; NULL where the run has no such key or no config). The keys are those whose values differ between the runs (config_diff), or the `keys` parameter's. A view cannot have one column per key (its columns would depend on the data; DuckDB refuses such a PIVOT in a view): `PIVOT (SELECT run, unnest(map_keys(config)) AS key, unnest(map_values(config)) AS value FROM run_table) ON key USING first(value)` widens it, and `rlsql report` prints it wide.
-- param: keys VARCHAR = NULL: comma-separated config keys to show (default: the keys that differ between the runs)
-- param: span INTEGER = 5, min 1: EMA span, in deduplicated steps
-- param: save_every INTEGER = NULL, min 1: checkpoint interval in steps (default: the run's trainer.hf_save_interval, else 20)
-- grain: run
WITH
    chosen AS (
        SELECT DISTINCT trim(k) AS key
        FROM (SELECT unnest(string_split({{ param('keys') }}, ',')) AS k)
        WHERE trim(k) <> ''
        UNION
        SELECT DISTINCT key FROM config_diff WHERE {{ param('keys') }} IS NULL
    ),
    first_values AS (
        SELECT run, key, arg_min(coalesce(value, 'null'), ordinal) AS value
        FROM config
        GROUP BY run, key
    ),
    grid AS (
        SELECT s.run, k.key, v.value
        FROM run_summary AS s
        CROSS JOIN chosen AS k
        LEFT JOIN first_values AS v ON v.run = s.run AND v.key = k.key
    ),
    maps AS (
        SELECT run, map_from_entries(list({'key': key, 'value': value} ORDER BY key)) AS config
        FROM grid
        GROUP BY run
    )
SELECT s.*, coalesce(m.config, MAP {}::MAP(VARCHAR, VARCHAR)) AS config
FROM run_summary AS s
LEFT JOIN maps AS m ON m.run = s.run
ORDER BY s.run
