-- question: Per app, for every pair of agents: how much their 95 % intervals overlap.
-- requires: intervals(grp, app, model, agent, lo, hi)
-- empty: it reads intervals the caller registers (analysis.stats.interval_overlap, as the report's query-count study does), never a result view, so `ask` has none to give it
-- Reads a relation `intervals` the caller registers (one interval per agent and group
-- `grp`, e.g. one subsample of the query-count study). overlap is the share of the
-- narrower interval covered by the other one: 0 when they are disjoint, 1 when one
-- holds the other. A zero-width interval (a point) counts as covered when the other
-- interval contains it.
WITH pairs AS (
    SELECT
        a.grp,
        a.app,
        a.model AS model_a, a.agent AS agent_a, a.lo AS lo_a, a.hi AS hi_a,
        b.model AS model_b, b.agent AS agent_b, b.lo AS lo_b, b.hi AS hi_b,
        greatest(0.0, least(a.hi, b.hi) - greatest(a.lo, b.lo)) AS shared,
        least(a.hi - a.lo, b.hi - b.lo) AS narrower
    FROM intervals a
    JOIN intervals b
      ON a.grp = b.grp AND a.app = b.app AND (a.model, a.agent) < (b.model, b.agent)
)
SELECT
    grp, app, model_a, agent_a, model_b, agent_b, lo_a, hi_a, lo_b, hi_b,
    CASE
        WHEN narrower > 0 THEN shared / narrower
        WHEN least(hi_a, hi_b) >= greatest(lo_a, lo_b) THEN 1.0
        ELSE 0.0
    END AS overlap
FROM pairs
ORDER BY grp, app, model_a, agent_a, model_b, agent_b
