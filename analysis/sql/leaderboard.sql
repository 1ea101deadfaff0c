-- question: Per app, task kind, model, agent and distinct query: correctness, safety and score (the means of its plays) and what its plays spent (turns, tokens, seconds, USD), the leaderboard's input.
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, trial_of, query_id, query_key, task, correct, safe, score, iterations, latency_s, agent_s, prompt_tokens, completion_tokens, cost_usd)
-- analysis/leaderboard.py pools these rows per board (overall, per app, per task kind):
-- the composite and its Wilson interval count distinct queries; the efficiency columns
-- count episodes. tokens is null for a query none of whose plays reported tokens
-- (reference agents); cost_usd is summed over the plays whose cost is known, `priced`
-- counts them. Seconds: the environment's (latency_s) plus the agent's (agent_s).
-- Repeated trials pool: an agent is named by the variant of its cell's trial 0
-- (`trial_of`), so the k trials of a query are k plays of one agent, averaged per query.
SELECT
    app,
    task,
    model,
    agent || CASE WHEN trial_of = 'base' THEN '' ELSE '@' || trial_of END             AS agent,
    coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id) AS qkey,
    count(*)                                                                          AS episodes,
    avg(correct::INTEGER)                                                             AS correct,
    avg(safe::INTEGER)                                                                AS safe,
    avg(score)                                                                        AS score,
    sum(correct::INTEGER)                                                             AS correct_episodes,
    sum(iterations)                                                                   AS turns,
    sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0))
        FILTER (WHERE prompt_tokens IS NOT NULL OR completion_tokens IS NOT NULL)     AS tokens,
    sum(latency_s + agent_s)                                                          AS seconds,
    sum(cost_usd)                                                                     AS cost_usd,
    count(cost_usd)                                                                   AS priced
FROM episodes
WHERE {where}
GROUP BY ALL
ORDER BY app, task, model, agent, qkey
