-- question: Per app, agent, task kind and level: episodes, distinct queries, correct and safe counts and the mean score over distinct queries (never pooled across task kinds).
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, task, correct, safe, score)
-- score is the task's own: 1/0 for mitigate and detect, ITBench-AA's for localize (0 when
-- a true cause is missed, else precision). A query played more than once counts once, at
-- the mean of its plays.
WITH per_query AS (
    SELECT
        app, model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END AS agent,
        task, level,
        coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id) AS qkey,
        count(*)                AS plays,
        avg(correct::INTEGER)   AS correct,
        avg(safe::INTEGER)      AS safe,
        avg(score)              AS score
    FROM episodes
    WHERE {where}
    GROUP BY ALL
)
SELECT
    app, model, agent, task, level,
    sum(plays)::BIGINT      AS n,
    count(*)                AS n_distinct,
    sum(correct)            AS n_correct,
    sum(safe)               AS n_safe,
    avg(score)              AS mean_score
FROM per_query
GROUP BY ALL
ORDER BY app, task, level, model, agent
