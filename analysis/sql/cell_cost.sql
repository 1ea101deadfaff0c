-- question: Per cell (seeds pooled): episodes, tokens, and money: the cell's cost in USD, per episode and per correct episode, and how many episodes a cost limit left unplayed.
-- requires: episodes(app, model, agent, level, queries, variant, task, correct, outcome, prompt_tokens, completion_tokens, cost_usd)
-- cost_usd is `episodes.cost_usd` summed (conf/pricing.yaml, pipeline/pricing.py); it is
-- null when any episode's cost is unknown (an unpriced model, a protocol agent that
-- reported no tokens), never a partial sum. cost_limit: episodes not played because the
-- cell's model.cost_limit was reached.
SELECT
    app, model,
    agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END     AS agent,
    level, queries, task,
    count(*)                                                                AS n,
    sum(correct::INTEGER)                                                   AS n_correct,
    count(*) FILTER (WHERE outcome = 'cost_limit')                          AS cost_limit,
    sum(prompt_tokens)                                                      AS prompt_tokens,
    sum(completion_tokens)                                                  AS completion_tokens,
    CASE WHEN count(cost_usd) = count(*) THEN sum(cost_usd) END             AS cost_usd,
    CASE WHEN count(cost_usd) = count(*) THEN avg(cost_usd) END             AS usd_per_episode,
    CASE WHEN count(cost_usd) = count(*)
         THEN sum(cost_usd) / nullif(sum(correct::INTEGER), 0) END          AS usd_per_correct
FROM episodes
WHERE {where}
GROUP BY ALL
ORDER BY app, model, agent, level, queries, task
