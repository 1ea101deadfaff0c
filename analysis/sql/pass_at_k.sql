-- question: Per cell played as repeated trials (a grid's `trials`, at least 2): pass@k and pass^k for k = 1 … trials, with 95 % bootstrap intervals over distinct queries.
-- requires: episodes(app, model, agent, level, seed, queries, variant, trial, trial_of, query_id, correct)
-- empty: no cell was played as repeated trials (a grid's `trials: k` with k of at least 2)
-- A cell's trials share `trial_of` (the variant of trial 0). Per query, with n plays of
-- which c are correct: pass@k = 1 - C(n-c, k) / C(n, k) (the unbiased estimator of
-- Chen et al. 2021: at least one of k plays correct) and pass^k = C(c, k) / C(n, k)
-- (tau-bench: all k plays correct); each is the product over i < k of (n-c-i)/(n-i),
-- resp. (c-i)/(n-i), which is 0 once a factor is. A cell's value is the mean over its
-- distinct queries; its interval the 2.5 and 97.5 % quantiles of that mean over 1000
-- bootstrap resamples of the queries (percentile bootstrap, drawn by a hash of the
-- resample, the draw and the cell, so the same data gives the same interval). Wilson
-- intervals do not apply: a query's pass@k is a fraction, not one success or failure.
-- k runs up to the fewest plays any query of the cell has.
WITH per_query AS (
    SELECT
        app, model, agent, level, seed, queries, trial_of,
        query_id,
        count(*)                    AS n,
        sum(correct::INTEGER)       AS c
    FROM episodes
    WHERE {where}
    GROUP BY ALL
),
cells AS (
    SELECT
        app, model, agent, level, seed, queries, trial_of,
        min(n)                      AS trials,
        count(*)                    AS n_distinct
    FROM per_query
    GROUP BY ALL
    HAVING min(n) >= 2
),
ks AS (
    SELECT *, unnest(range(1, trials + 1)) AS k FROM cells
),
scored AS (
    SELECT
        ks.app, ks.model, ks.agent, ks.level, ks.seed, ks.queries, ks.trial_of, ks.k,
        ks.trials, ks.n_distinct,
        row_number() OVER (
            PARTITION BY ks.app, ks.model, ks.agent, ks.level, ks.seed, ks.queries,
                ks.trial_of, ks.k
            ORDER BY p.query_id
        ) - 1                                                                   AS idx,
        1 - (SELECT product((p.n - p.c - i)::DOUBLE / (p.n - i)) FROM range(ks.k) t(i))
                                                                                AS pass_at,
        (SELECT product((p.c - i)::DOUBLE / (p.n - i)) FROM range(ks.k) t(i))   AS pass_hat
    FROM ks
    JOIN per_query p USING (app, model, agent, level, seed, queries, trial_of)
),
resamples AS (
    SELECT app, model, agent, level, seed, queries, trial_of, k, n_distinct,
        unnest(range(1000)) AS b
    FROM ks
),
draws AS (
    SELECT *, unnest(range(n_distinct)) AS draw FROM resamples
),
picked AS (
    SELECT
        app, model, agent, level, seed, queries, trial_of, k, b,
        hash(b, draw, app, model, agent, level, seed, queries, trial_of) % n_distinct AS idx
    FROM draws
),
boot AS (
    SELECT app, model, agent, level, seed, queries, trial_of, k, b,
        avg(s.pass_at)  AS pass_at,
        avg(s.pass_hat) AS pass_hat
    FROM picked
    JOIN scored s USING (app, model, agent, level, seed, queries, trial_of, k, idx)
    GROUP BY ALL
),
bounds AS (
    SELECT app, model, agent, level, seed, queries, trial_of, k,
        quantile_cont(pass_at, 0.025)   AS pass_at_k_lo,
        quantile_cont(pass_at, 0.975)   AS pass_at_k_hi,
        quantile_cont(pass_hat, 0.025)  AS pass_hat_k_lo,
        quantile_cont(pass_hat, 0.975)  AS pass_hat_k_hi
    FROM boot
    GROUP BY ALL
)
SELECT
    s.app, s.model,
    s.agent || CASE WHEN s.trial_of = 'base' THEN '' ELSE '@' || s.trial_of END AS agent,
    s.level, s.seed, s.queries, s.trial_of,
    any_value(s.trials)         AS trials,
    any_value(s.n_distinct)     AS n_distinct,
    s.k,
    avg(s.pass_at)              AS pass_at_k,
    any_value(b.pass_at_k_lo)   AS pass_at_k_lo,
    any_value(b.pass_at_k_hi)   AS pass_at_k_hi,
    avg(s.pass_hat)             AS pass_hat_k,
    any_value(b.pass_hat_k_lo)  AS pass_hat_k_lo,
    any_value(b.pass_hat_k_hi)  AS pass_hat_k_hi
FROM scored s
JOIN bounds b USING (app, model, agent, level, seed, queries, trial_of, k)
GROUP BY s.app, s.model, s.agent, s.level, s.seed, s.queries, s.trial_of, s.k
ORDER BY s.app, s.model, agent, s.level, s.seed, s.queries, s.k
