-- question: Tokens per second of every model call of the given apps, with its task, attempt and the attempt's outcome (NetLLMBench's tokens/s per task attempt).
-- requires: calls(query_id, app, model, agent, level, seed, queries, variant, turn, task, attempt, call_index, purpose, tokens_per_s)
-- requires: steps(query_id, app, model, agent, level, seed, queries, variant, turn, status, task_solved)
-- params: apps
-- An attempt is one turn; its outcome is `solved` when the turn left its task complete,
-- the step's failure status (parse_error, exec_error, …) when its action failed, and
-- `not solved` when the action ran but the task is still incomplete. Repair calls
-- (purpose reprompt, example, master) share their turn's outcome.
SELECT
    c.app,
    c.task,
    c.attempt,
    c.model,
    c.agent || CASE WHEN c.variant = 'base' THEN '' ELSE '@' || c.variant END AS agent,
    c.query_id,
    c.turn,
    c.call_index,
    c.purpose,
    c.tokens_per_s,
    CASE
        WHEN s.task_solved THEN 'solved'
        WHEN s.status = 'ok' THEN 'not solved'
        ELSE s.status
    END AS outcome
FROM calls c
JOIN steps s USING (app, model, agent, level, seed, queries, variant, query_id, turn)
WHERE list_contains($apps, c.app) AND {where}
ORDER BY c.app, c.task, c.model, c.agent, c.query_id, c.turn, c.call_index
