-- question: Per app and agent: how many episodes ended with each outcome.
-- requires: episodes(app, model, agent, level, seed, outcome)
SELECT app, model, agent, outcome, count(*) AS n
FROM episodes
WHERE {where}
GROUP BY app, model, agent, outcome
ORDER BY app, model, agent, outcome
