"""incidents: network incidents on generated FRR labs of every topology family (levels 6-8).

A query is a lab (generators/netlab: chain, ring, mesh, leafspine, campus, isp at four
sizes) with faults drawn from the catalogue (faults/: OSPF, BGP, data plane, L2,
services), benign anomalies documented as intended, and at levels 7-8 a user's ticket;
every draw is validated live. Tasks: mitigate (fix it), detect (is anything wrong?),
localize (name every root cause). Modules: config (schema, tiers), variety (labs per
query, strata, the cap), draw (pure draws), specs (labs by name), labs (the live-lab
interface and today's implementation), reading (a lab read into an Observed), verdict
(pure judgement), session (one query on one lab), tickets, validate, prompt, episode,
scoring, generator, capacity, app, bench. README.md says what it asks and how it judges.
"""

from pipeline.api import AppSpec, BenchSpec

# 2: prompts state DHCP and svcctl, status shows vrrp and service.
# 3: a detect query's class is fixed per index (pipeline.api.healthy_query), not redrawn;
# a faulty detect query holds 1-2 faults (level 6: 1), never composed, only intent-only
# ones at level 8; the localize prompt says how many problems there may be (as mitigate's),
# the detect prompt what a faulty network of its tier may differ in.
# 4: large and xlarge labs carry a standing security policy (faults/security.py: every
#    router's INPUT rejects TCP/UDP port 7 from the LANs), stated in the prompt and checked
#    by closed probes; four silent fault kinds and one benign anomaly on it (policy_dp.py);
#    level 8 now draws chain and ISP labs too. Small and medium labs are unchanged.
# 5: level 8 holds 4-5 faults and 2-3 benign anomalies, and always draws a masking pair
#    (Tier.pairs); levels 6 and 7 are unchanged.
APP_VERSION = "5"
APP = AppSpec(
    kind="incidents",
    app=".app:IncidentsApp",
    config=".config:IncidentsConfig",
    version=APP_VERSION,
    levels=(6, 7, 8),
    tasks=("mitigate", "detect", "localize"),
    # Query i depends on its index and the queries before it only (every cap is a share
    # of the index): n queries are the first n of any more (tests/test_prefix_queries.py).
    prefix_queries=True,
    benches=(
        BenchSpec("incidents_levels", ".bench:run_levels"),
        BenchSpec("incidents_variety", ".bench:run_variety"),
        # the live proof of the data-plane, L2 and services kinds (faults_dp); root, ~8 min
        BenchSpec("incidents_catalogue_dp", ".catalogue_dp:run_catalogue_dp"),
        # the live proof of the OSPF and BGP kinds and benign anomalies (faults_rp); root, ~10 min
        BenchSpec("incidents_catalogue", ".faults.bench:run_catalogue"),
    ),
)
