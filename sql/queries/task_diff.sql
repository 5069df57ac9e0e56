-- name: task_diff
-- version: 1
-- description: Each run against the baseline, task by task, over the tasks both ran with at least one reward:
--   trials and successes (reward > 0) of each, their rates and delta (rate_run - rate_base), the two-sided
--   Fisher exact p-value of the 2x2 table [[successes_base, failures_base], [successes_run, failures_run]] (the
--   sum of the probabilities of the tables with its margins no more likely than the observed one, within a
--   relative 1e-7), its Benjamini-Hochberg q-value over the run's shared tasks, and a verdict. No rows when
--   `baseline` names none of the runs. Ordered by run, q_value, task_name.
-- param: baseline VARCHAR = NULL: the run to compare the others with (default: the first run by name)
-- param: alpha DOUBLE = 0.05, min 0, max 1: the false discovery rate: a task whose q_value is below it changed
-- grain: run, task_name
-- column: run: the run compared with the baseline: its folder's name
-- column: baseline: the baseline run
-- column: task_name: a task both runs ran with at least one reward
-- column: trials_base: the task's trials with a reward in the baseline
-- column: successes_base: those of them whose reward > 0
-- column: trials_run: the task's trials with a reward in the run
-- column: successes_run: those of them whose reward > 0
-- column: rate_base: successes_base / trials_base (0-1)
-- column: rate_run: successes_run / trials_run (0-1)
-- column: delta: rate_run - rate_base
-- column: p_value: two-sided Fisher exact test of the 2x2 table, as scipy.stats.fisher_exact computes it
-- column: q_value: the Benjamini-Hochberg adjusted p-value over the run's shared tasks (monotone in p_value,
--   at most 1)
-- column: verdict: `regressed` (delta < 0) or `improved` (delta > 0) where q_value < alpha, else `same`
WITH
    pairs AS (
        SELECT
            r.run,
            b.run AS baseline,
            r.task_name,
            b.trials AS trials_base,
            b.successes AS successes_base,
            r.trials AS trials_run,
            r.successes AS successes_run
        FROM baseline_run AS c
        JOIN task_rates AS b ON b.run = c.run
        JOIN task_rates AS r ON r.task_name = b.task_name AND r.run <> b.run
    ),
    -- every table with the observed margins, by x, the baseline's successes in it (hypergeometric support)
    tables AS (
        SELECT
            run,
            task_name,
            successes_base AS observed,
            trials_base AS n1,
            trials_run AS n2,
            successes_base + successes_run AS k,
            unnest(generate_series(
                greatest(0, successes_base + successes_run - trials_run),
                least(trials_base, successes_base + successes_run)
            )) AS x
        FROM pairs
    ),
    -- ln P(x) = ln [C(n1, x) C(n2, k - x) / C(n1 + n2, k)]
    probabilities AS (
        SELECT
            run,
            task_name,
            x,
            observed,
            log_factorial(n1) - log_factorial(x) - log_factorial(n1 - x)
            + log_factorial(n2) - log_factorial(k - x) - log_factorial(n2 - k + x)
            - log_factorial(n1 + n2) + log_factorial(k) + log_factorial(n1 + n2 - k) AS log_p
        FROM tables
    ),
    p_values AS (
        SELECT
            p.run,
            p.task_name,
            -- the tables no more likely than the observed one, with scipy's and R's relative tolerance; all of
            -- them is exactly 1 (as scipy's shortcut for an observed table at the mode), not a sum rounded below
            CASE
                WHEN max(p.log_p) <= o.log_p + ln(1 + 1e-7) THEN 1.0
                ELSE least(1.0, sum(CASE WHEN p.log_p <= o.log_p + ln(1 + 1e-7) THEN exp(p.log_p) ELSE 0.0 END))
            END AS p_value
        FROM probabilities AS p
        JOIN probabilities AS o ON o.run = p.run AND o.task_name = p.task_name AND o.x = o.observed
        GROUP BY p.run, p.task_name, o.log_p
    ),
    ranked AS (
        SELECT
            run,
            task_name,
            p_value,
            row_number() OVER (PARTITION BY run ORDER BY p_value, task_name) AS p_rank,
            count(*) OVER (PARTITION BY run) AS tasks
        FROM p_values
    ),
    -- Benjamini-Hochberg: q_i = min over j >= i of p_j * m / j (tied p-values get one q-value)
    adjusted AS (
        SELECT
            run,
            task_name,
            p_value,
            least(1.0, min(p_value * tasks / p_rank) OVER (
                PARTITION BY run ORDER BY p_rank DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
            )) AS q_value
        FROM ranked
    )
SELECT
    d.run,
    d.baseline,
    d.task_name,
    d.trials_base,
    d.successes_base,
    d.trials_run,
    d.successes_run,
    d.successes_base / nullif(d.trials_base, 0) AS rate_base,
    d.successes_run / nullif(d.trials_run, 0) AS rate_run,
    d.successes_run / nullif(d.trials_run, 0) - d.successes_base / nullif(d.trials_base, 0) AS delta,
    a.p_value,
    a.q_value,
    CASE
        WHEN a.q_value < {{ param('alpha') }} AND d.successes_run * d.trials_base < d.successes_base * d.trials_run
            THEN 'regressed'
        WHEN a.q_value < {{ param('alpha') }} AND d.successes_run * d.trials_base > d.successes_base * d.trials_run
            THEN 'improved'
        ELSE 'same'
    END AS verdict
FROM pairs AS d
JOIN adjusted AS a ON a.run = d.run AND a.task_name = d.task_name
ORDER BY d.run, a.q_value, d.task_name
