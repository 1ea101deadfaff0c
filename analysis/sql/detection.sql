-- question: Detection per app, agent and level: positives (faulty networks) and negatives (healthy ones), true and false positive rates, balanced accuracy, and the accuracy of the best constant answer on the same queries.
-- requires: episodes(app, app_variant, model, agent, level, seed, queries, variant, query_id, task, correct, answer)
-- requires: queries(app, app_variant, level, seed, query_id, ground_truth)
-- The truth is the query's ground_truth.healthy; the answer's "healthy" says what the agent
-- said (null: it gave none, which counts as wrong on either side). tpr: faulty networks
-- answered faulty; fpr: healthy networks answered faulty; balanced accuracy: the mean of
-- the accuracy on each side (a constant answer scores 0.5); constant_accuracy: the share of
-- the commoner side, what always giving that answer would score.
WITH judged AS (
    SELECT
        e.app, e.model,
        e.agent || CASE WHEN e.variant = 'base' THEN '' ELSE '@' || e.variant END AS agent,
        e.level,
        NOT json_extract(q.ground_truth, '$.healthy')::BOOLEAN AS faulty,
        json_extract(e.answer, '$.healthy')::BOOLEAN          AS said_healthy,
        e.correct
    FROM episodes e
    JOIN queries q USING (app, app_variant, level, seed, query_id)
    WHERE e.task = 'detect' AND {where}
)
SELECT
    app, model, agent, level,
    count(*)                                                        AS n,
    count(*) FILTER (WHERE faulty)                                  AS positives,
    count(*) FILTER (WHERE NOT faulty)                              AS negatives,
    avg(correct::INTEGER) FILTER (WHERE faulty)                     AS tpr,
    avg((said_healthy IS NOT NULL AND NOT said_healthy)::INTEGER) FILTER (WHERE NOT faulty) AS fpr,
    (coalesce(avg(correct::INTEGER) FILTER (WHERE faulty), 0)
        + coalesce(avg(correct::INTEGER) FILTER (WHERE NOT faulty), 0)) / 2 AS balanced_accuracy,
    avg(correct::INTEGER)                                           AS accuracy,
    greatest(avg(faulty::INTEGER), 1 - avg(faulty::INTEGER))        AS constant_accuracy,
    count(*) FILTER (WHERE said_healthy IS NULL)                    AS unanswered
FROM judged
GROUP BY ALL
ORDER BY app, level, model, agent
