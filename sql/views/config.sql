-- name: config
-- version: 1
-- description: Each run's rl_config.yaml flattened: run, ordinal (document order), key (dotted path such as trainer.hf_save_interval), value (text), value_json (lists stay whole, as JSON).
-- grain: run, key
SELECT run, ordinal, key, value, value_json
FROM config_src
