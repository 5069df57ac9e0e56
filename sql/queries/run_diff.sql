-- name: run_diff
-- version: 1
-- description: Each run against the baseline in one line, over the tasks both ran with at least one reward (as
--   task_diff): how many, how many improved and regressed at `alpha`, the mean of the per-task deltas with its
--   95% interval (mean_delta -/+ 1.96 x their sample standard deviation / sqrt(shared_tasks), NULL for fewer
--   than two tasks) and the success rates of both over the shared tasks' trials. One row per run other than
--   the baseline, none when `baseline` names none of the runs.
-- param: baseline VARCHAR = NULL: the run to compare the others with (default: the first run by name)
-- param: alpha DOUBLE = 0.05, min 0, max 1: the false discovery rate: a task whose q_value is below it changed
-- grain: run
-- column: run: the run compared with the baseline: its folder's name
-- column: baseline: the baseline run
-- column: shared_tasks: tasks both ran with at least one reward
-- column: improved: shared tasks whose verdict is `improved`
-- column: regressed: shared tasks whose verdict is `regressed`
-- column: mean_delta: the mean of the shared tasks' deltas (rate_run - rate_base)
-- column: ci_low: mean_delta - 1.96 x the deltas' sample standard deviation / sqrt(shared_tasks)
-- column: ci_high: mean_delta + 1.96 x the deltas' sample standard deviation / sqrt(shared_tasks)
-- column: success_base: the baseline's success rate (0-1) over the shared tasks' trials with a reward
-- column: success_run: the run's success rate (0-1) over the shared tasks' trials with a reward
WITH
    per_run AS (
        SELECT
            run,
            count(*) AS shared_tasks,
            count(CASE WHEN verdict = 'improved' THEN 1 END) AS improved,
            count(CASE WHEN verdict = 'regressed' THEN 1 END) AS regressed,
            avg(delta) AS mean_delta,
            stddev_samp(delta) AS sd_delta,
            sum(successes_base) / nullif(sum(trials_base), 0) AS success_base,
            sum(successes_run) / nullif(sum(trials_run), 0) AS success_run
        FROM task_diff
        GROUP BY run
    )
SELECT
    r.run,
    b.run AS baseline,
    coalesce(p.shared_tasks, 0) AS shared_tasks,
    coalesce(p.improved, 0) AS improved,
    coalesce(p.regressed, 0) AS regressed,
    p.mean_delta,
    p.mean_delta - 1.96 * p.sd_delta / sqrt(p.shared_tasks) AS ci_low,
    p.mean_delta + 1.96 * p.sd_delta / sqrt(p.shared_tasks) AS ci_high,
    p.success_base,
    p.success_run
FROM baseline_run AS b
JOIN runs AS r ON r.run <> b.run
LEFT JOIN per_run AS p ON p.run = r.run
ORDER BY r.run
