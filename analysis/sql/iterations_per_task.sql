-- question: Per task (operation label) of the given apps: mean agent turns per episode, per agent (NetLLMBench's iterations per task).
-- requires: episodes(app, model, agent, level, seed, operation, iterations, correct)
-- params: apps
SELECT
    app,
    operation AS task,
    model,
    agent,
    count(*)                AS n,
    avg(iterations)         AS mean_iterations,
    stddev_samp(iterations) AS sd_iterations,
    avg(correct::INTEGER)   AS correct_rate
FROM episodes
WHERE list_contains($apps, app) AND {where}
GROUP BY app, operation, model, agent
ORDER BY app, task, model, agent
