-- question: Per task of the given apps: mean turns an agent spent on it per query, and how often it was solved (NetLLMBench's iterations per task).
-- requires: steps(app, model, agent, level, seed, queries, variant, query_id, task, task_solved)
-- params: apps
-- A task's iterations in one episode are the turns that worked on it (its attempts),
-- solved or not; a task an episode never reached has no steps and does not count.
-- Single-task apps have one task per query, their operation label.
WITH per_task AS (
    SELECT
        app,
        model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END AS agent,
        query_id,
        task,
        count(*)            AS iterations,
        bool_or(task_solved) AS solved
    FROM steps
    WHERE list_contains($apps, app) AND {where}
    GROUP BY app, model, agent, variant, level, seed, queries, query_id, task
)
SELECT
    app,
    task,
    model,
    agent,
    count(*)                AS n,
    avg(iterations)         AS mean_iterations,
    stddev_samp(iterations) AS sd_iterations,
    avg(solved::INTEGER)    AS solved_rate
FROM per_task
GROUP BY app, task, model, agent
ORDER BY app, task, model, agent
