-- name: config_diff
-- version: 1
-- description: The rl_config.yaml keys whose value differs between the runs that have a config (a key one run
--   lacks differs too): run, key (dotted path), value (text, `null` for a YAML null, NULL where the run lacks
--   the key). Ordered by key, then run. Empty for fewer than two runs with a config.
-- grain: run, key
-- column: run: the run: its folder's name
-- column: key: a dotted config key whose value differs between the runs
-- column: value: this run's value as text, `null` for a YAML null, NULL where the run lacks the key
WITH
    config_runs AS (
        SELECT DISTINCT run FROM run_files WHERE artifact = 'config'
    ),
    keys AS (
        SELECT DISTINCT key FROM config
    ),
    grid AS (
        SELECT
            r.run,
            k.key,
            CASE WHEN c.key IS NOT NULL THEN coalesce(c.value, 'null') END AS value,
            c.value_json
        FROM config_runs AS r
        CROSS JOIN keys AS k
        LEFT JOIN config AS c ON c.run = r.run AND c.key = k.key
    ),
    differing AS (
        SELECT key
        FROM grid
        GROUP BY key
        HAVING count(DISTINCT coalesce(value_json, '<absent>')) > 1
    )
SELECT g.run, g.key, g.value
FROM grid AS g
JOIN differing AS d ON d.key = g.key
ORDER BY g.key, g.run
