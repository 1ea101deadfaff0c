-- question: Every query one app's agents played, with whether each agent got it right (the query-count study's input).
-- requires: episodes(app, model, agent, level, seed, query_id, correct)
-- params: app
SELECT level, seed, query_id, model, agent, correct
FROM episodes
WHERE app = $app AND {where}
ORDER BY level, seed, query_id, model, agent
