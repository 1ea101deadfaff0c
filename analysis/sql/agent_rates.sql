-- question: Per app and agent (model, agent), over all levels: episode, correct and safe counts.
-- requires: episodes(app, model, agent, level, seed, correct, safe)
SELECT
    app,
    model,
    agent,
    count(*)                AS n,
    sum(correct::INTEGER)   AS n_correct,
    sum(safe::INTEGER)      AS n_safe
FROM episodes
WHERE {where}
GROUP BY app, model, agent
ORDER BY app, model, agent
