-- question: Two agents on the same queries of one app: how often both, only one, or neither got it right.
-- requires: episodes(app, model, agent, level, seed, query_id, correct)
-- params: app, model_a, agent_a, model_b, agent_b
-- The 2 x 2 table McNemar's test reads; queries are matched on (level, seed, query_id),
-- so only queries both agents played count.
WITH e AS (SELECT * FROM episodes WHERE app = $app AND {where})
SELECT
    count(*)                                        AS n,
    count(*) FILTER (WHERE a.correct AND b.correct)         AS both_correct,
    count(*) FILTER (WHERE a.correct AND NOT b.correct)     AS only_a,
    count(*) FILTER (WHERE NOT a.correct AND b.correct)     AS only_b,
    count(*) FILTER (WHERE NOT a.correct AND NOT b.correct) AS neither
FROM e a
JOIN e b USING (level, seed, query_id)
WHERE a.model = $model_a AND a.agent = $agent_a AND b.model = $model_b AND b.agent = $agent_b
