-- question: Localization per app, agent and level: mean score (ITBench-AA), exact rate, loose recall (device and kind right, component aside), the share of named causes that are not true causes, and how often a true cause was missed.
-- requires: episodes(app, model, agent, level, variant, task, correct, score, answer, detail)
-- From each episode's verdict detail (pipeline/answers.py: answer_verdict): missed, extra,
-- named and loose_recall; an episode without an answer scores 0 and counts as unanswered
-- (its loose recall 0, it named nothing).
WITH judged AS (
    SELECT
        app, model,
        agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END AS agent,
        level, score, correct, answer IS NOT NULL AS answered,
        coalesce(json_extract(detail, '$.loose_recall')::DOUBLE, 0) AS loose_recall,
        coalesce(json_extract(detail, '$.missed')::INTEGER, 0)      AS missed,
        coalesce(json_extract(detail, '$.extra')::INTEGER, 0)       AS extra,
        coalesce(json_extract(detail, '$.named')::INTEGER, 0)       AS named
    FROM episodes
    WHERE task = 'localize' AND {where}
)
SELECT
    app, model, agent, level,
    count(*)                                        AS n,
    avg(score)                                      AS mean_score,
    avg(correct::INTEGER)                           AS exact_rate,
    avg(loose_recall)                               AS loose_recall,
    sum(extra) / nullif(sum(named), 0)              AS extra_cause_rate,
    avg((extra > 0)::INTEGER) FILTER (WHERE answered) AS with_extra_rate,
    avg((missed > 0)::INTEGER) FILTER (WHERE answered) AS missed_rate,
    count(*) FILTER (WHERE NOT answered)            AS unanswered
FROM judged
GROUP BY ALL
ORDER BY app, level, model, agent
