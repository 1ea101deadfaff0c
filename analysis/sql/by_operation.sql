-- question: Per app, agent, task kind and operation label (the task or fault type): episodes, distinct queries, correct and safe counts over distinct queries, and mean turns.
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, task, operation, correct, safe, iterations)
WITH per_query AS (
    SELECT
        app,
        model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END                   AS agent,
        task,
        operation,
        coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id)                   AS qkey,
        count(*)                AS plays,
        avg(correct::INTEGER)   AS correct,
        avg(safe::INTEGER)      AS safe,
        avg(iterations)         AS turns
    FROM episodes
    WHERE {where}
    GROUP BY ALL
)
SELECT
    app,
    model,
    agent,
    task,
    operation,
    sum(plays)::BIGINT      AS n,
    count(*)                AS n_distinct,
    sum(correct)            AS n_correct,
    sum(safe)               AS n_safe,
    avg(turns)              AS mean_turns
FROM per_query
GROUP BY app, model, agent, task, operation
ORDER BY app, task, operation, model, agent
