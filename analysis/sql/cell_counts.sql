-- question: Per cell (app, model, agent, level): episode counts and the raw sums the summary turns into rates with 95 % intervals.
-- requires: episodes(app, model, agent, level, seed, correct, safe, iterations, latency_s, prompt_tokens, completion_tokens, outcome)
SELECT
    app,
    model,
    agent,
    level,
    count(*)                        AS n,
    sum(correct::INTEGER)           AS n_correct,
    sum(safe::INTEGER)              AS n_safe,
    avg(iterations)                 AS mean_iterations,
    avg(latency_s)                  AS mean_latency_s,
    sum(prompt_tokens)              AS prompt_tokens,
    sum(completion_tokens)          AS completion_tokens,
    string_agg(DISTINCT outcome, ',' ORDER BY outcome) AS outcomes
FROM episodes
WHERE {where}
GROUP BY app, model, agent, level
ORDER BY app, model, agent, level
