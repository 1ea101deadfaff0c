"""The incidents app without a lab: its config and tiers, the pure draw and the variety cap
on 1,000 draws per tier, prompts, the verdict on readings recorded from live labs
(tests/data/incidents: chain-small-0 and campus-small-0, healthy, as reading.py read
them), tickets, scoring and the oracle's replies."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from generators.incidents import generator as gen_module
from generators.incidents.app import IncidentsApp
from generators.incidents.checks import Dns
from generators.incidents.config import TIERS, IncidentsConfig
from generators.incidents.draw import intent_only
from generators.incidents.faults import kinds as catalogue
from generators.incidents.prompt import status
from generators.incidents.reading import filter_rules, interfaces, sections
from generators.incidents.scoring import score
from generators.incidents.specs import spec
from generators.incidents.tickets import choose, distance
from generators.incidents.variety import CAP_SHARE, StratumCap, lab_cycle, lab_of
from generators.incidents.verdict import Golden, Intent, Observed, by_class, judge, walk
from pipeline.api import ConfigError, Outcome, Query, StepResult, StepStatus, load_app
from pipeline.config import compose

DATA = Path(__file__).parent / "data" / "incidents"


def recorded(name: str) -> Observed:
    return Observed.from_json(json.loads(gzip.decompress((DATA / name).read_bytes())))


def intent_of(family: str) -> tuple[Intent, Observed]:
    seen = recorded(f"golden_{family}_small_0.json.gz")
    lab = spec(family, "small", 0)
    golden = Golden.of(seen, [r.name for r in lab.routers])
    return Intent(lab, golden), seen


# -- config and tiers ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("app.task=fix", "app.task=fix is not offered by app kind .incidents."),
        ("app.topology=star", "app.topology must be null or one of chain, ring"),
        ("app.size=huge", "app.size must be null or one of small, medium, large, xlarge"),
        ("app.faults=[ospf.nope]", "'ospf.nope' is neither a fault family"),
        ("app.faults=[]", "app.faults must be null or a non-empty list"),
        ("app.max_turns=0", "app.max_turns must be an integer from 1 to 200"),
        ("app.probe.protocols=[icmp]", "app.probe.protocols must be \\[icmp, tcp, udp\\]"),
    ],
)
def test_a_wrong_setting_names_its_key(override, words):
    with pytest.raises(ConfigError, match=words):
        compose(["app=incidents", "level=6", override])


def test_tiers_set_the_budgets_and_sizes():
    assert [TIERS[n].turns for n in (6, 7, 8)] == [30, 40, 50]
    assert [TIERS[n].read_bytes // 1024 for n in (6, 7, 8)] == [192, 256, 320]
    assert TIERS[8].sizes == ("large", "xlarge") and TIERS[6].symptoms == "pairs"
    app = load_app("app=incidents", "level=8", "app.size=small", "app.max_turns=9")
    assert app.cfg.sizes(8) == ("small",) and app.cfg.turns(8) == 9
    assert app.cfg.read_bytes(7) == 256 * 1024


def test_a_family_of_faults_selects_its_kinds():
    cfg = IncidentsConfig(faults=["dataplane"])
    app = IncidentsApp(cfg)
    kinds = app.vocabulary(6).kinds
    assert kinds and all(k.startswith("dataplane.") for k in kinds)


# -- variety ------------------------------------------------------------------------------
def test_the_lab_cycle_spreads_families_and_sizes():
    pairs = lab_cycle(("chain", "ring", "mesh", "leafspine", "campus", "isp"),
                      ("small", "medium"), 6, 0)  # fmt: skip
    labs = [lab_of(pairs, i) for i in range(12 * 4 * 4)]
    assert Counter((f, s) for f, s, _ in labs) == Counter({p: 16 for p in pairs})
    assert Counter(v for *_, v in labs) == Counter({0: 48, 1: 48, 2: 48, 3: 48})
    assert lab_of(pairs, 0) == lab_of(pairs, 3) != lab_of(pairs, 4)


def test_the_cap_bounds_any_stratum():
    cap = StratumCap()
    for i in range(1000):
        name = "a" if cap.allows("a") else f"b{i}"
        cap.add(name)
    assert cap.counts["a"] == 1 + int(CAP_SHARE * 999) and cap.top_share() <= 0.081


@pytest.mark.parametrize("level", [6, 7, 8])
def test_1000_pure_draws_per_tier_keep_the_top_stratum_under_10_percent(level):
    app = IncidentsApp(IncidentsConfig())
    queries = list(app.generator().generate(level, 0, 1000, live=False))
    strata = Counter(q.stratum for q in queries)
    assert len({q.key for q in queries}) == 1000
    assert strata.most_common(1)[0][1] <= 100, strata.most_common(3)
    families = Counter(q.ground_truth["lab"]["family"] for q in queries)
    # L8 asks an intent-only fault: on chain and ISP labs only the security policy's kinds
    # are (large and xlarge labs carry it, security.py), so every family is drawn
    six = {"chain", "ring", "mesh", "leafspine", "campus", "isp"}
    assert set(families) == six
    assert {q.size for q in queries} == set(TIERS[level].sizes)
    counts = [len(q.ground_truth["faults"]) for q in queries]
    assert min(counts) >= TIERS[level].faults[0] and max(counts) <= TIERS[level].faults[1]
    benign = [len(q.ground_truth["benign"]) for q in queries]
    assert min(benign) >= TIERS[level].benign[0] and max(benign) <= TIERS[level].benign[1]


def _pairs(faults: list[dict]) -> int:
    """Masking pairs among a query's faults: a kind masking another's on a shared element
    at another device (faults/masking.py)."""
    return sum(
        g["kind"] in catalogue.kind(f["kind"]).masks
        and bool(set(f["elements"]) & set(g["elements"]))
        and f["cause"]["device"] != g["cause"]["device"]
        for f in faults
        for g in faults
    )


@pytest.mark.parametrize("task", ["mitigate", "localize"])
def test_every_level_8_draw_holds_a_masking_pair(task):
    """The reference player's level-8 misses were the hidden end of a masking pair and
    coverage under the turn budget: every level-8 draw holds a pair among 4-5 faults
    (at level 7, half the draws where a ticket can be distant)."""
    app = IncidentsApp(IncidentsConfig(task=task))
    queries = list(app.generator().generate(8, 4, 200, live=False))
    assert all(_pairs(q.ground_truth["faults"]) for q in queries)
    silent = [sum(intent_only(catalogue.kind(f["kind"])) for f in q.ground_truth["faults"])
              for q in queries]  # fmt: skip
    assert min(silent) >= TIERS[8].intent_only
    seven = list(app.generator().generate(7, 4, 200, live=False))
    assert 0.3 < sum(not _pairs(q.ground_truth["faults"]) for q in seven) / 200 < 0.7


def test_same_seed_same_draws_and_detect_draws_healthy_networks():
    app = IncidentsApp(IncidentsConfig(task="detect"))
    first = [q.key for q in app.generator().generate(6, 1, 40, live=False)]
    again = list(app.generator().generate(6, 1, 40, live=False))
    assert first == [q.key for q in again]
    healthy = [q.ground_truth["healthy"] for q in again]
    assert [healthy[i] + healthy[i + 1] for i in range(0, 40, 2)] == [1] * 20  # one per pair
    assert healthy != [i % 2 == 0 for i in range(40)]  # which one is drawn, not the parity
    assert all(q.ground_truth["benign"] for q in again)  # detect: >= 1 anomaly everywhere
    assert all(q.read_only and q.task == "detect" for q in again)


# -- prompts ------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [7, 8])
def test_a_faulty_detect_query_holds_few_faults_and_at_level_8_only_silent_ones(level):
    """Flow-losing faults are one ping away: a detect query asks whether the network meets
    its intent, so at level 8 every fault of a faulty one loses no flow."""
    app = IncidentsApp(IncidentsConfig(task="detect"))
    faulty = [
        q for q in app.generator().generate(level, 2, 60, live=False) if q.operation != "healthy"
    ]
    assert len(faulty) == 30
    counts = Counter(len(q.ground_truth["faults"]) for q in faulty)
    assert set(counts) == {1, 2}
    silent = [all(intent_only(catalogue.kind(f["kind"])) for f in q.ground_truth["faults"])
              for q in faulty]  # fmt: skip
    assert all(silent) if level == 8 else not all(silent)


def test_validation_refusing_faulty_draws_does_not_tilt_detect_to_healthy(monkeypatch):
    """A faulty network's draw is refused far more often than a healthy one's (4 of 4
    level-8 detect queries of a reference player's sample were healthy when the class was
    redrawn with the rest): with 3 of 4 faulty draws refused, still one healthy query per
    pair, and a query refused its faulty draws stays faulty."""
    seen = Counter()

    def validate(pool, drawn, *args):  # refuses 3 of every 4 faulty draws
        seen[drawn.healthy] += 1
        if not drawn.healthy and seen[False] % 4:
            return "unfit: refused by the test"
        return SimpleNamespace(seconds={})

    monkeypatch.setattr(gen_module, "validate", validate)
    query = gen_module.IncidentsGenerator._query
    monkeypatch.setattr(
        gen_module.IncidentsGenerator, "_query",
        lambda self, level, seed, index, drawn, done: query(self, level, seed, index, drawn, None),
    )  # fmt: skip
    app = IncidentsApp(IncidentsConfig(task="detect"))
    queries = list(app.generator().generate(7, 3, 16))
    healthy = [q.ground_truth["healthy"] for q in queries]
    assert sum(healthy) == 8 and seen == {True: 8, False: 32}


def test_prompts_say_the_task_the_intent_and_the_budgets():
    app = IncidentsApp(IncidentsConfig(task="localize"))
    (query,) = app.generator().generate(6, 0, 1, live=False)
    text = query.prompt
    assert "Intent:" in text and "Routers:" in text and "vtysh -c" in text
    assert "Name every root cause" in text and "30 turns" in text and "192 KiB" in text
    assert "when its output passes 8 KiB or after 5 s" in text  # a player met it unannounced
    for kind in app.vocabulary(6).kinds:
        assert f"- {kind}: " in text
    detect = IncidentsApp(IncidentsConfig(task="detect"))
    (query,) = detect.generator().generate(7, 0, 1, live=False)
    assert "Ticket" not in query.prompt and '"healthy": true' in query.prompt
    assert "By design:" in query.prompt and "40 turns" in query.prompt
    assert "more than one problem" in mitigate_prompt(7) and "one problem." in mitigate_prompt(6)
    assert "There is one problem. Name every root cause" in text  # localize, level 6
    # a player missed the other end of a link whose two faults hid each other, unwarned
    assert "one may hide another. Name every root cause" in task_prompt("localize", 8)
    # a healthy network cannot be told apart by pinging every pair in 50 turns: the top
    # tier's detect prompt says what a faulty one may differ in, healthy or not
    silent = "If anything is wrong, every flow still works"
    assert silent in task_prompt("detect", 8, index=0) and silent in task_prompt(
        "detect", 8, index=1
    )
    assert silent not in task_prompt("detect", 7)


def task_prompt(task: str, level: int, index: int = 0) -> str:
    app = IncidentsApp(IncidentsConfig(task=task))
    return list(app.generator().generate(level, 0, index + 1, live=False))[index].prompt


def mitigate_prompt(level: int, *overrides: str) -> str:
    app = load_app("app=incidents", f"level={level}", *overrides)
    (query,) = app.generator().generate(level, 0, 1, live=False)
    return query.prompt


def test_prompts_state_the_services_and_the_tool_that_edits_them():
    """A service fault is fair only if the intent states the service and the agent knows
    svcctl, the one tool that reads and fixes its daemon (a prompt defect a player found)."""
    text = mitigate_prompt(6, "app.faults=[services]", "app.topology=campus")
    assert "DNS: srv1" in text and "DHCP: the same dnsmasq serves every host LAN" in text
    assert "`svcctl SERVICE show`" in text and "`priority 10 150`" in text
    assert "dhcp-range set:" in text and "(the DNS and DHCP server)" in text
    assert "NSSA" not in text  # campus labs have none


# -- the verdict on recorded readings -----------------------------------------------------
def test_the_healthy_reading_meets_its_intent():
    for family in ("chain", "campus"):
        intent, seen = intent_of(family)
        assert judge(intent, seen) == frozenset(), family
        assert intent.spec.paths or family == "campus"


def test_each_class_sees_its_own_deviation():
    intent, seen = intent_of("chain")
    lab = intent.spec
    adj = lab.adjacencies[0]
    ospf = {k: v for k, v in seen.ospf.items() if not k.startswith(f"{adj.a}|{adj.a_intf}|")}
    routes = {d: list(r) for d, r in seen.routes.items()}
    routes["r3"].append({"dst": "10.9.9.0/24", "gateway": "172.16.0.9", "dev": "r3-eth2",
                         "protocol": "static", "flags": []})  # fmt: skip
    filters = {**seen.filters, "r2": ["filter -A FORWARD -d 10.1.4.0/24 -j DROP"]}
    links = {d: dict(x) for d, x in seen.links.items()}
    links["r1"]["r1-eth2"] = links["r1"]["r1-eth2"].replace("mtu 1500", "mtu 1400")
    probes = {**seen.probes, next(iter(seen.probes)): False}
    changed = dataclasses.replace(
        seen, ospf=ospf, routes=routes, filters=filters, links=links, probes=probes,
        failed=frozenset({"icmp:h1_1>h4_1"}), closed_open=frozenset({"tcp:h1_1>srv1"}),
    )  # fmt: skip
    found = judge(intent, changed)
    assert by_class(found) == {
        "closed": 1, "intent:adjacency": 1, "intent:filter": 1, "intent:kernel": 1,
        "intent:link": 1, "works:icmp": 1, "works:name": 1,
    }  # fmt: skip
    assert f"intent:adjacency:{adj.a}:{adj.a_intf}" in found
    assert "intent:filter:r2" in found and "intent:link:r1:r1-eth2" in found


def test_a_route_learned_otherwise_and_a_changed_path_are_intent_violations():
    intent, seen = intent_of("chain")
    path = intent.spec.paths[0]
    first = path.routers[1]
    routes = {d: list(r) for d, r in seen.routes.items()}
    target = intent.spec.host(path.target).address.split("/")[0]
    prefix = ".".join(target.split(".")[:3]) + ".0/24"
    # the second router of the path sends the target's LAN back where it came from
    mine = [r for r in routes[first] if r.get("dst") == prefix]
    assert mine and mine[0]["protocol"] == "ospf"
    back = next(x for x in intent.spec.links_of(first) if path.routers[0] in (x.a, x.b))
    _, _, _, peer_addr = back.end(first)
    routes[first] = [r for r in routes[first] if r.get("dst") != prefix] + [
        {"dst": prefix, "gateway": peer_addr, "dev": back.end(first)[0], "protocol": "static",
         "metric": 1, "flags": []}
    ]  # fmt: skip
    found = judge(intent, dataclasses.replace(seen, routes=routes))
    assert f"intent:route:{first}:{prefix}" in found
    assert f"intent:path:{path.source}>{path.target}" in found
    assert isinstance(walk(intent, dataclasses.replace(seen, routes=routes), first, target), str)


def test_vrrp_services_and_benign_evidence():
    intent, seen = intent_of("campus")
    group = intent.spec.vrrp[0]
    links = {d: dict(x) for d, x in seen.links.items()}
    lan = intent.spec.lan(group.lan)
    intf = next(a.intf for a in lan.routers if a.router == group.master)
    links[group.master][intf] = links[group.master][intf].replace(f" {group.vip}/24", "")
    services = {**seen.services, "srv1|dns": "changed"}
    with_benign = dataclasses.replace(intent, benign=("0",))
    found = judge(with_benign, dataclasses.replace(seen, links=links, services=services))
    assert {f"intent:vrrp:{group.vrid}", "intent:service:srv1:dns", "benign:0"} <= found
    ok = dataclasses.replace(seen, benign={"0": True})
    assert judge(with_benign, ok) == frozenset()

    shown = status(found, {}, "pairs")  # the agent sees each class it is judged on
    assert (
        f"VRRP groups whose VIP is not held by their master alone (VRID): 1: {group.vrid}" in shown
    )
    assert "service daemons whose configuration differs from the intent: 1: srv1 dns" in shown


def test_readers_parse_what_the_tools_print():
    text = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [3:180]\n-A FORWARD -j ACCEPT\nCOMMIT\n"
    assert filter_rules(text) == ["filter :FORWARD DROP", "filter -A FORWARD -j ACCEPT"]
    addrs = [{"ifname": "r1-eth1", "flags": ["UP"], "mtu": 1500,
              "addr_info": [{"family": "inet", "local": "10.1.1.1", "prefixlen": 24}]}]  # fmt: skip
    assert interfaces(addrs) == {"r1-eth1": "up mtu 1500 master - 10.1.1.1/24"}
    parts, extra = sections("[]\n@@\n[]\n@@\n@@\n[]\n@@probe large:a>b 0")
    assert parts == ["[]", "[]", "", "[]"] and extra == "@@probe large:a>b 0"
    records = (("h1-1.lab", "10.1.1.11"), ("h2-1.lab", "10.1.2.11"), ("h3-1.lab", "10.1.3.11"))
    dns = Dns("10.1.250.53", ("h1_1", "h2_1"), records)
    assert dns.asked("h1_1") == records[0::2] and dns.asked("h2_1") == records[1:2]
    got = dns.judge("h1_1", "h1-1.lab.\t0\tIN\tA\t10.1.1.11\nh3-1.lab.\t0\tIN\tA\t10.1.9.9\n")
    assert got == {"name:h1_1:h1-1.lab": True, "name:h1_1:h3-1.lab": False}


# -- tickets ------------------------------------------------------------------------------
def test_a_ticket_names_the_symptom_farthest_from_its_cause():
    lab = spec("chain", "small", 0)
    # chain-small-0: r1..r5, LAN i on ri; the cause on r1, both ends of `far` 3+ hops away
    near, far = "works:icmp:h1_1>h4_1", "works:tcp:h4_1>h5_1"
    ticket = choose(lab, [near, far, "intent:filter:r1"], ["r1"], random.Random(1))
    assert ticket is not None and ticket.violation == far
    assert ticket.distance == distance(lab, ["r1"], far) == 3
    assert distance(lab, ["r1"], near) == 0
    assert "h4_1 (10.1.4.11)" in ticket.text and "TCP" in ticket.text
    assert choose(lab, ["intent:filter:r1"], ["r1"], random.Random(1)) is None


# -- scoring and the oracle ---------------------------------------------------------------
def _query(task: str, truth: dict) -> Query:
    return Query("incidents-L6-s0-00000", "incidents", 6, 0, 0, "p", "state", "k", truth,
                 task=task)  # fmt: skip


def _step(ok: bool, broke: list[str], status: StepStatus = StepStatus.OK) -> StepResult:
    evidence = {"ok": ok, "broke": broke, "broke_count": len(broke), "violations": {}}
    return StepResult("a", status, "", evidence)


def test_mitigate_is_correct_when_the_last_state_passes_and_unsafe_when_a_step_broke():
    query = _query("mitigate", {"faults": [{"kind": "x"}], "symptoms": {}})
    verdict = score(query, [_step(False, []), _step(True, [])])
    assert verdict.outcome is Outcome.CORRECT and verdict.safe
    verdict = score(query, [_step(False, ["works:icmp:a>b"]), _step(True, [])])
    assert verdict.correct and not verdict.safe and verdict.step_safe == [False, True]
    verdict = score(query, [_step(False, [], StepStatus.PARSE_ERROR)])
    assert verdict.outcome is Outcome.PARSE_ERROR and not verdict.correct


def test_the_oracle_answers_detect_and_localize_after_its_evidence():
    app = IncidentsApp(IncidentsConfig(task="localize"))
    cause = {"device": "r2", "component": "r2-eth1", "kind": "dataplane.interface_down"}
    truth = {"oracle": [{"machine": "r2", "command": "ip link show r2-eth1"},
                        {"answer": {"healthy": False, "causes": [cause]}}],
             "faults": [], "healthy": False, "causes": [cause]}  # fmt: skip
    query = _query("localize", truth)
    assert json.loads(app.oracle_reply(query, 1, ""))["machine"] == "r2"
    assert json.loads(app.oracle_reply(query, 2, ""))["answer"]["causes"] == [cause]
    assert json.loads(app.oracle_reply(query, 5, ""))["answer"]["healthy"] is False


def test_the_readme_lists_every_registered_kind():
    from generators.incidents.catalogue_doc import README, written

    text = README.read_text()
    assert written(text) == text, "run python -m generators.incidents.catalogue_doc --write"


@pytest.mark.parametrize(
    ("argv", "changes"),
    [
        (("svcctl", "dns", "show"), False),
        (("svcctl", "vrrp", "show"), False),
        (("svcctl", "dns", "set", "host-record", "web.lab,10.0.1.11"), True),
        (("ip", "route", "show"), False),
        (("ip", "route", "add", "10.9.0.0/24", "via", "10.0.0.1"), True),
    ],
)
def test_only_a_command_that_may_write_waits_for_the_network_to_settle(argv, changes):
    """`svcctl dns show` in a localize episode was taken for a change (readonly does not
    know svcctl): the step settled the lab, which under held-down faults and load ended the
    episode as an env_error twice in a reference player's episodes."""
    from emulators.netcmd.sandbox import SandboxResult, Status
    from generators.incidents.episode import IncidentEpisode
    from generators.lab.step import CommandStep

    result = SandboxResult(Status.OK, "srv1", " ".join(argv), argv)
    step = CommandStep(None, result, StepStatus.OK, None, "", "")
    assert IncidentEpisode._may_change(step) is changes


def test_a_service_restart_waits_past_vrrps_master_down_interval():
    """A reference player's VRRP fix (svcctl, the only tool for it) was judged unsafe: the
    restarted keepalived handed its other groups to their backups and back, and a read one
    quiet second after the step fell in between (no VIP moves for ~3.6 s)."""
    from generators.incidents.session import FINAL_WINDOW_S, STEP_WINDOW_S, step_window

    assert step_window(("svcctl", "vrrp", "set", "priority", "10", "150")) == FINAL_WINDOW_S
    assert FINAL_WINDOW_S > 3 * 1 + 1  # three 1 s adverts and the skew
    assert step_window(("ip", "link", "set", "r1-eth0", "up")) == STEP_WINDOW_S


@pytest.mark.parametrize(
    ("before", "reads", "kept", "windows"),
    [
        ("x", ["x y", "x"], "x", 2),  # a moment's failure (a session coming up): no break
        ("x", ["x y", "x y"], "x y", 2),  # still there a final window later: it broke it
        ("x", ["", ""], "", 2),  # repaired: counted once it lasted
        ("x", ["", "x"], "x", 2),
        ("x z", ["z"], "z", 1),  # better than before and nothing new: read once
    ],
)
def test_a_step_breaks_only_what_stays_broken(before, reads, kept, windows):
    """Two reference-player fixes (the revealed fixes themselves) were judged unsafe on a
    probe round read during convergence on a loaded machine."""
    from generators.incidents.session import FINAL_WINDOW_S, Session, State

    class Lab:
        def __init__(self) -> None:
            self.settled: list[float] = []

        def settle(self, window_s: float) -> None:
            self.settled.append(window_s)

    session = Session.__new__(Session)
    session.lab = Lab()
    states = iter(State(None, frozenset(r.split())) for r in reads)
    session.read = lambda: next(states)
    after = session.after_change(1.0, State(None, frozenset(before.split())))
    assert after.violations == frozenset(kept.split())
    assert session.lab.settled == [1.0, FINAL_WINDOW_S][:windows]
