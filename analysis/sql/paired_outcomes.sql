-- question: Two agents on the same queries of one app: how often both, only one, or neither got it right.
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, query_key, correct)
-- params: app, model_a, agent_a, model_b, agent_b
-- empty: the two agents share no query of this app (queries are matched on their key: play both on the same levels and seeds)
-- The 2 x 2 table McNemar's test reads. Queries are matched on their key, so only
-- queries both agents played count, once each; an agent that played a query more than
-- once is counted correct on it when it was correct on at least half of its plays.
-- An agent other than base names its variant: "zero_shot@v1a2b3c4d".
WITH e AS (
    SELECT
        model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END                                   AS agent,
        coalesce(query_key, app_variant || '/' || level || '/' || seed || '/' || query_id)                                   AS qkey,
        avg(correct::INTEGER) >= 0.5            AS correct
    FROM episodes
    WHERE app = $app AND {where}
    GROUP BY ALL
)
SELECT
    count(*)                                        AS n,
    count(*) FILTER (WHERE a.correct AND b.correct)         AS both_correct,
    count(*) FILTER (WHERE a.correct AND NOT b.correct)     AS only_a,
    count(*) FILTER (WHERE NOT a.correct AND b.correct)     AS only_b,
    count(*) FILTER (WHERE NOT a.correct AND NOT b.correct) AS neither
FROM e a
JOIN e b USING (qkey)
WHERE a.model = $model_a AND a.agent = $agent_a AND b.model = $model_b AND b.agent = $agent_b
