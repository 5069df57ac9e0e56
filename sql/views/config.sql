-- name: config
-- version: 1
-- description: Each run's rl_config.yaml flattened: run, ordinal (document order), key (dotted path such as
--   trainer.hf_save_interval), value (text), value_json (lists stay whole, as JSON).
-- grain: run, key
-- column: run: the run: its folder's name
-- column: ordinal: the key's position in the YAML document (1 = first)
-- column: key: the dotted path of the key (e.g. trainer.hf_save_interval)
-- column: value: the value as text (a list as JSON text, `null` for a YAML null)
-- column: value_json: the value as JSON (lists stay whole)
SELECT run, ordinal, key, value, value_json
FROM config_src
