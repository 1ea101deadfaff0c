-- question: Per cell (app, model, agent, level): correctness and safety counts, mean turns, latency, tokens and tokens/s.
-- requires: episodes(app, model, agent, level, seed, correct, safe, iterations, latency_s, agent_s, prompt_tokens, completion_tokens, outcome)
-- Rates and their 95 % intervals are added in Python (statsmodels). tokens_per_s is the
-- completion tokens over the agent's reply time, over episodes that report tokens; it is
-- NULL for reference agents (no model, no tokens).
SELECT
    app,
    model,
    agent,
    level,
    count(*)                                        AS n,
    sum(correct::INTEGER)                           AS n_correct,
    sum(safe::INTEGER)                              AS n_safe,
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
GROUP BY app, model, agent, level
ORDER BY app, model, agent, level
