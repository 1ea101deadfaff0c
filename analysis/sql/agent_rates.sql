-- question: Per app, agent and task kind (model, agent; a variant other than base is part of the agent's name), over all levels: episodes, distinct queries, and correct and safe counts over distinct queries.
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, task, correct, safe)
-- A query (its key) played more than once by one agent counts once, at the mean of its
-- episodes: n_correct and n_safe are sums over distinct queries, the intervals' count is
-- n_distinct. Migrated rows without a key count by (app variant, level, seed, query id).
WITH per_query AS (
    SELECT
        app,
        model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END                   AS agent,
        task,
        coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id)                   AS qkey,
        count(*)                AS plays,
        avg(correct::INTEGER)   AS correct,
        avg(safe::INTEGER)      AS safe
    FROM episodes
    WHERE {where}
    GROUP BY ALL
)
SELECT
    app,
    model,
    agent,
    task,
    sum(plays)::BIGINT      AS n,
    count(*)                AS n_distinct,
    sum(correct)            AS n_correct,
    sum(safe)               AS n_safe
FROM per_query
GROUP BY app, model, agent, task
ORDER BY app, model, agent, task
