-- question: The capability boundary: per app, agent, task kind, operation (template or fault type) and size class, how often the agent was right (over distinct queries).
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, task, operation, size, correct, safe)
-- size is '' for queries drawn without a size class (shown as "any"). A query played more
-- than once by one agent counts once, at the mean of its plays.
WITH per_query AS (
    SELECT
        app,
        model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END AS agent,
        task,
        operation,
        CASE WHEN size = '' THEN 'any' ELSE size END AS size,
        coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id) AS qkey,
        avg(correct::INTEGER)   AS correct,
        avg(safe::INTEGER)      AS safe
    FROM episodes
    WHERE {where}
    GROUP BY ALL
)
SELECT
    app, model, agent, task, operation, size,
    count(*)                AS n_distinct,
    sum(correct)            AS n_correct,
    sum(safe)               AS n_safe,
    avg(correct)            AS correct_rate
FROM per_query
GROUP BY ALL
ORDER BY app, task, operation, size, model, agent
