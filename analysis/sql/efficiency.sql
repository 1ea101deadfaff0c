-- question: Efficiency per app, level, task kind, agent and outcome: median and p90 of turns, commands and KiB read, blocked steps and diagnostics, beside the budgets.
-- requires: episodes(app, model, agent, level, variant, task, outcome, iterations, commands, blocked, bytes_read, diagnostics, turn_budget, read_budget)
-- bytes_read: the output the agent's actions read (step outputs and diagnostics, as shown
-- under the read budget; pipeline/play.py). Budgets are the episodes' own (0 turns / null
-- bytes in rows written before budgets were recorded).
SELECT
    app, level, task,
    model,
    agent || CASE WHEN variant = 'base' THEN '' ELSE '@' || variant END AS agent,
    outcome,
    count(*)                                        AS n,
    median(iterations)                              AS turns_p50,
    quantile_cont(iterations, 0.9)                  AS turns_p90,
    median(commands)                                AS commands_p50,
    quantile_cont(commands, 0.9)                    AS commands_p90,
    median(bytes_read) / 1024                       AS kib_read_p50,
    quantile_cont(bytes_read, 0.9) / 1024           AS kib_read_p90,
    avg(blocked)                                    AS mean_blocked,
    avg(diagnostics)                                AS mean_diagnostics,
    max(turn_budget)                                AS turn_budget,
    max(read_budget) / 1024                         AS read_budget_kib
FROM episodes
WHERE {where}
GROUP BY ALL
ORDER BY app, level, task, model, agent, outcome
