-- question: Per app, agent and operation label (the task or fault type): correct and safe counts and mean turns.
-- requires: episodes(app, model, agent, level, seed, operation, correct, safe, iterations)
SELECT
    app,
    model,
    agent,
    operation,
    count(*)                AS n,
    sum(correct::INTEGER)   AS n_correct,
    sum(safe::INTEGER)      AS n_safe,
    avg(iterations)         AS mean_turns
FROM episodes
WHERE {where}
GROUP BY app, model, agent, operation
ORDER BY app, operation, model, agent
