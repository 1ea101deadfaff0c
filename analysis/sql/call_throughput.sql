-- question: Tokens per second of every model call (task attempt) of the given apps, with the task and the episode's outcome (NetLLMBench's tokens/s per task attempt).
-- requires: calls(query_id, app, model, agent, level, seed, tokens_per_s)
-- requires: episodes(app, model, agent, level, seed, query_id, operation, outcome)
-- params: apps
SELECT
    c.app,
    e.operation AS task,
    c.model,
    c.agent,
    c.query_id,
    c.tokens_per_s,
    e.outcome
FROM calls c
JOIN episodes e USING (app, model, agent, level, seed, query_id)
WHERE list_contains($apps, c.app) AND {where}
ORDER BY c.app, task, c.model, c.agent, c.query_id
