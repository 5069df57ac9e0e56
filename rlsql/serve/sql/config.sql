-- The fleet page: every run's rl_config.yaml keys and values, to filter and group the runs by any key.
SELECT run, key, value FROM config ORDER BY run, ordinal
