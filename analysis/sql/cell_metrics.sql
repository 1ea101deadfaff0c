-- question: Per cell (app, model, agent, level, query count, variant; seeds pooled): its task, episodes, distinct queries, correctness and safety counts and the mean score over distinct queries, mean turns, latency, tokens and tokens/s.
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, task, correct, safe, score, iterations, latency_s, agent_s, prompt_tokens, completion_tokens, outcome)
-- Rates and their 95 % intervals are added in Python (statsmodels) over n_distinct: a
-- query played more than once counts once, at the mean of its episodes. tokens_per_s is
-- the completion tokens over the agent's reply time, over episodes that report tokens;
-- it is NULL for reference agents (no model, no tokens).
WITH per_query AS (
    SELECT
        app, model, agent, level, queries, variant, task,
        coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id)                   AS qkey,
        avg(correct::INTEGER)   AS correct,
        avg(safe::INTEGER)      AS safe,
        avg(score)              AS score
    FROM episodes
    WHERE {where}
    GROUP BY ALL
), distinct_counts AS (
    SELECT
        app, model, agent, level, queries, variant, task,
        count(*)                AS n_distinct,
        sum(correct)            AS n_correct,
        sum(safe)               AS n_safe,
        avg(score)              AS mean_score
    FROM per_query
    GROUP BY ALL
), per_cell AS (
    SELECT
        app, model, agent, level, queries, variant, task,
        count(*)                                        AS n,
        avg(iterations)                                 AS mean_turns,
        avg(latency_s)                                  AS mean_latency_s,
        quantile_cont(latency_s, 0.95)                  AS p95_latency_s,
        avg(agent_s)                                    AS mean_agent_s,
        avg(prompt_tokens)                              AS mean_prompt_tokens,
        avg(completion_tokens)                          AS mean_completion_tokens,
        sum(completion_tokens)
            / nullif(sum(agent_s) FILTER (WHERE completion_tokens IS NOT NULL), 0)
                                                        AS tokens_per_s,
        string_agg(DISTINCT outcome, ',' ORDER BY outcome) AS outcomes
    FROM episodes
    WHERE {where}
    GROUP BY ALL
)
SELECT
    app, model, agent, level, queries, variant, task,
    n, n_distinct, n_correct, n_safe, mean_score,
    mean_turns, mean_latency_s, p95_latency_s, mean_agent_s,
    mean_prompt_tokens, mean_completion_tokens, tokens_per_s, outcomes
FROM per_cell JOIN distinct_counts USING (app, model, agent, level, queries, variant, task)
ORDER BY app, model, agent, level, queries, variant
