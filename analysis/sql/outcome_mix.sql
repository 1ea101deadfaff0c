-- question: Per app and agent (a variant other than base is part of the agent's name): how many episodes ended with each outcome.
-- requires: episodes(app, model, agent, level, seed, queries, variant, outcome)
SELECT app, model, agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END AS agent, outcome, count(*) AS n
FROM episodes
WHERE {where}
GROUP BY ALL
ORDER BY app, model, agent, outcome
