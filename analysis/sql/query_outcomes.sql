-- question: Every distinct query one app's agents played, with each agent's mean correctness on it (the query-count study's input).
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, correct)
-- params: app
-- One row per (query key, agent): a query played more than once (e.g. by a 10-query and a
-- 5-query cell of the same agent) is one independent draw, at the mean of its plays.
SELECT
    coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id)                       AS qkey,
    model,
    agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END                       AS agent,
    avg(correct::INTEGER)       AS correct
FROM episodes
WHERE app = $app AND {where}
GROUP BY ALL
ORDER BY qkey, model, agent
