-- name: trial_phases
-- version: 2
-- description: Where a trial's time goes: per phase (environment_setup, agent_setup, agent_execution or older
--   files' agent_duration_sec, verifier) the median, mean and total seconds and the share of the summed
--   trial_duration, then the time no phase covers (unattributed) or the excess of phases over the trial
--   (overlap). No rows when the files have no phase column. A run with an older trials CSV (no phase
--   columns) beside trace_jobs/ takes the phases from its result.json files (version 2, where version 1 had none).
-- grain: run, phase
-- column: run: the run: its folder's name
-- column: phase: environment_setup, agent_setup, agent_execution, verifier, then unattributed or overlap
-- column: median_s: median seconds over trials with the phase
-- column: mean_s: mean seconds over trials with the phase
-- column: total_s: summed seconds
-- column: share_of_trial: total_s / summed trial_duration of trials that have one (0-1)
-- column: trials: trials with the phase
{%- set phases = ["environment_setup", "agent_setup", "agent_execution", "verifier"] %}
WITH
    phases AS (
        SELECT
            run,
            trial_duration,
            environment_setup_duration AS environment_setup,
            agent_setup_duration AS agent_setup,
            coalesce(agent_execution_duration, agent_duration_sec) AS agent_execution,
            verifier_duration AS verifier,
            -- per trial with a trial_duration: the seconds no phase accounts for (negative: phases overlap)
            CASE WHEN trial_duration IS NOT NULL THEN
                trial_duration
                - coalesce(environment_setup_duration, 0) - coalesce(agent_setup_duration, 0)
                - coalesce(agent_execution_duration, agent_duration_sec, 0) - coalesce(verifier_duration, 0)
            END AS residual
        FROM (
            -- a run whose trials CSV has no phase columns (an older parser) beside trace_jobs/ takes them from
            -- the result.json of the same trial (trial_fill); json_phases (rlsql/engine/sources.py) names such
            -- columns, and without any the join is `false`, so no result.json is read
            SELECT
                t.run,
                t.agent_duration_sec
                {%- for c in ["trial_duration", "environment_setup_duration", "agent_setup_duration",
                              "agent_execution_duration", "verifier_duration"] %},
                coalesce(t.{{ c | ident }}, f.{{ c | ident }}) AS {{ c | ident }}
                {%- endfor %}
            FROM trial_rows AS t
            LEFT JOIN trial_fill AS f
                ON {% if json_phases %}true{% else %}false{% endif %} AND f.run = t.run AND f.trial_name = t.trial_name
        )
    ),
    totals AS (
        -- one pass over the trials: every phase's figures side by side (10M rows are read once, not per phase)
        SELECT
            run,
            sum(trial_duration) AS total_trial_s
            {%- for p in phases %},
            quantile_cont({{ p | ident }}, 0.5) AS {{ (p ~ "_median") | ident }},
            avg({{ p | ident }}) AS {{ (p ~ "_mean") | ident }},
            sum({{ p | ident }}) AS {{ (p ~ "_total") | ident }},
            sum({{ p | ident }}) FILTER (WHERE trial_duration IS NOT NULL) AS {{ (p ~ "_timed") | ident }},
            count({{ p | ident }}) AS {{ (p ~ "_trials") | ident }}
            {%- endfor %},
            quantile_cont(residual, 0.5) AS residual_median,
            sum(residual) AS residual_total,
            count(residual) AS residual_trials
        FROM phases
        GROUP BY run
    )
SELECT run, phase, median_s, mean_s, total_s, share_of_trial, trials
FROM (
    {%- for p in phases %}
    SELECT run, {{ p | lit }} AS phase, {{ (p ~ "_median") | ident }} AS median_s, {{ (p ~ "_mean") | ident }} AS mean_s,
        {{ (p ~ "_total") | ident }} AS total_s, {{ (p ~ "_timed") | ident }} / total_trial_s AS share_of_trial,
        {{ (p ~ "_trials") | ident }} AS trials, {{ loop.index | lit }} AS position
    FROM totals
    WHERE {{ (p ~ "_trials") | ident }} > 0
    UNION ALL
    {%- endfor %}
    SELECT
        run,
        CASE WHEN residual_total >= 0 THEN 'unattributed' ELSE 'overlap' END,
        CASE WHEN residual_total >= 0 THEN residual_median ELSE -residual_median END,
        abs(residual_total) / residual_trials,
        abs(residual_total),
        CASE WHEN residual_total >= 0 THEN residual_total / total_trial_s END,
        residual_trials,
        5
    FROM totals
    WHERE residual_trials > 0
)
ORDER BY run, position
