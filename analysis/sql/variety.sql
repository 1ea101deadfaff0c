-- question: Variety per app, app variant, level and task kind: queries, distinct keys, prompts and strata, the most common stratum's share, and distinct prompts per distinct query.
-- requires: queries(app, app_variant, level, seed, query_key, prompt, task, stratum)
-- A stratum is what the app says a query was drawn in (e.g. topology family, size and
-- fault kinds at their placements); '' when the app names none, which then counts as one.
WITH strata AS (
    SELECT app, app_variant, level, task, stratum, count(*) AS n
    FROM queries
    GROUP BY ALL
), top AS (
    SELECT app, app_variant, level, task, max(n) AS top_n
    FROM strata
    GROUP BY ALL
)
SELECT
    q.app, q.app_variant, q.level, q.task,
    count(*)                                        AS n,
    count(DISTINCT q.query_key)                     AS distinct_queries,
    count(DISTINCT q.prompt)                        AS distinct_prompts,
    count(DISTINCT q.stratum)                       AS strata,
    any_value(t.top_n) / count(*)                   AS top_stratum_share,
    count(DISTINCT q.prompt) / nullif(count(DISTINCT q.query_key), 0) AS prompts_per_query
FROM queries q
JOIN top t USING (app, app_variant, level, task)
GROUP BY ALL
ORDER BY q.app, q.app_variant, q.level, q.task
