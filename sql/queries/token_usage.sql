-- name: token_usage
-- version: 1
-- description: What the agent's tokens cost, per run and outcome (Success, Failure, then No reward: no reward,
--   or no trials row at all): trials with a trajectory, their agent steps, the mean per trial of prompt and
--   completion tokens (summed over its agent steps that have the count), the share of prompt tokens served from
--   the cache, percentiles of the completion tokens per trial, and the largest single step's prompt (the
--   context's high-water mark). Copied-context steps are left out, final_metrics is not used (the steps are what
--   was billed). An outcome no trial has gets no row.
-- grain: run, outcome
-- column: run: the run: its folder's name
-- column: outcome: Success (reward > 0), Failure (reward = 0) or No reward (no reward, or no trials row)
-- column: trials: trials with at least one step that is not copied context
-- column: agent_steps: their agent steps that are not copied context
-- column: mean_prompt_tokens: mean over trials of their agent steps' prompt_tokens (a trial without any left out)
-- column: mean_completion_tokens: mean over trials of their agent steps' completion_tokens (a trial without any
--   left out)
-- column: cached_share: cached tokens / prompt tokens, summed over the agent steps that have both (NULL without any)
-- column: p50_completion_tokens: median of the trials' completion tokens (linear interpolation)
-- column: p90_completion_tokens: 90th percentile of the trials' completion tokens (linear interpolation)
-- column: max_step_prompt_tokens: the largest prompt_tokens of a single agent step
WITH per_trial AS (
    -- each trial's figures first: the join to the trials is then one row per trial
    SELECT
        run, trial_name,
        count(*) FILTER (WHERE source = 'agent') AS agent_steps,
        sum(prompt_tokens) FILTER (WHERE source = 'agent') AS prompt_tokens,
        sum(completion_tokens) FILTER (WHERE source = 'agent') AS completion_tokens,
        sum(cached_tokens) FILTER (WHERE source = 'agent' AND prompt_tokens IS NOT NULL) AS cached_with_prompt,
        sum(prompt_tokens) FILTER (WHERE source = 'agent' AND cached_tokens IS NOT NULL) AS prompt_with_cached,
        max(prompt_tokens) FILTER (WHERE source = 'agent') AS max_step_prompt_tokens
    FROM trajectory_steps
    WHERE NOT copied
    GROUP BY run, trial_name
),
with_outcome AS (
    SELECT p.*, coalesce(t.outcome, 'No reward') AS outcome
    FROM per_trial AS p
    LEFT JOIN trial_rows AS t ON t.run = p.run AND t.trial_name = p.trial_name
)
SELECT
    run,
    outcome,
    count(*) AS trials,
    CAST(sum(agent_steps) AS BIGINT) AS agent_steps,
    avg(prompt_tokens) AS mean_prompt_tokens,
    avg(completion_tokens) AS mean_completion_tokens,
    CASE WHEN sum(prompt_with_cached) > 0 THEN sum(cached_with_prompt) / sum(prompt_with_cached) END AS cached_share,
    quantile_cont(completion_tokens, 0.5) AS p50_completion_tokens,
    quantile_cont(completion_tokens, 0.9) AS p90_completion_tokens,
    max(max_step_prompt_tokens) AS max_step_prompt_tokens
FROM with_outcome
GROUP BY run, outcome
ORDER BY run, CASE outcome WHEN 'Success' THEN 1 WHEN 'Failure' THEN 2 ELSE 3 END
