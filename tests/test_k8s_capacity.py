"""k8s query keys and capacity: every widened fault is a valid object that breaks
connectivity, keys are distinct within a seed and across seed slots, and the enumerated
capacity is what a seed can really draw."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from emulators.k8s import schema
from emulators.k8s.policy import matrix, mismatches, probe_pairs, view_from_objects
from emulators.k8s.resources import BY_PLURAL
from generators.k8s import boutique
from generators.k8s.app import K8sApp
from generators.k8s.capacity import K8sCapacity, balanced_per_seed, cached_capacity
from generators.k8s.config import K8sConfig
from generators.k8s.faults import LEVELS, apply, candidates, workload_policies
from generators.k8s.generator import K8sQueryGenerator
from pipeline import querygen
from pipeline.capacity import check_request
from pipeline.errors import ConfigError
from pipeline.querygen import SEED_SLOTS, CapacityExhausted, key_slot, seed_slot

KINDS = ("RI", "AI", "CP", "CPR", "AE")


@pytest.fixture(scope="module")
def generator():
    """Wired as the app wires it: a capacity error words the level's exact capacity."""
    made = K8sQueryGenerator(capacity=lambda level: K8sCapacity(made.evaluator).level(level))
    return made


@pytest.fixture(scope="module")
def counter(generator):
    return K8sCapacity(generator.evaluator)


@pytest.mark.parametrize("kind", KINDS)
def test_every_level1_fault_is_a_valid_object_that_breaks_connectivity(kind):
    intended = boutique.intended_policies()
    objects = boutique.cluster_objects()
    base = workload_policies(intended)
    view = view_from_objects([*objects, *intended])
    pairs = probe_pairs(view)
    expected = matrix(view, pairs)
    variants = Counter()
    for candidate in candidates(kind, base):
        policies = copy.deepcopy(base)
        fault = apply(policies, candidate)
        variants[fault["variant"]] += 1
        obj = copy.deepcopy(policies[fault["policy"]])
        schema.default_network_policy(obj)
        schema.validate_network_policy(BY_PLURAL["networkpolicies"], obj)  # raises if not
        faulted = [policies.get(p["metadata"]["name"], p) for p in intended]
        actual = matrix(view_from_objects([*objects, *faulted]), pairs)
        assert mismatches(expected, actual), fault
    assert sum(variants.values()) >= 100 and len(variants) >= 4, variants


def test_level1_capacity_is_exact_and_large(counter):
    cap = counter.level(1)
    assert cap.exact and cap.total == len({s.key for k in KINDS for s in counter.singles()[k]})
    assert min(cap.by_operation.values()) >= 100, cap.by_operation
    # Query i of a seed has fault kind i mod 5 (shifted by the seed): the scarcest decides.
    assert cap.per_seed <= 5 * min(cap.per_seed_by_operation.values()) + 4
    for level in (2, 3):
        # As the app reports it (its in-process memo: the contract suite's count of the same
        # level, ~15 s for these two, is reused; alone, this counts them).
        more = cached_capacity(level, counter, None)
        assert not more.exact and more.per_seed > 10 * cap.per_seed


def test_generated_keys_are_the_enumerated_ones(generator, counter):
    enumerated = {s.key for k in KINDS for s in counter.singles()[k]}
    keys = [q.key for q in generator.generate(1, 2, 60)]
    assert set(keys) <= enumerated and len(set(keys)) == len(keys)


@pytest.mark.slow
@pytest.mark.parametrize(("level", "count"), [(1, 80), (2, 100), (3, 100)])
def test_keys_are_distinct_within_and_across_seed_slots(generator, level, count):
    seen: dict[str, str] = {}
    for seed in range(SEED_SLOTS):
        for query in generator.generate(level, seed, count):
            assert query.key not in seen, (query.query_id, seen.get(query.key))
            assert key_slot(query.key) == seed_slot(seed)
            seen[query.key] = query.query_id


def test_same_seed_same_bytes_and_prefix(generator):
    def dump(queries):
        return [(q.key, q.prompt, q.ground_truth_json()) for q in queries]

    fresh = K8sQueryGenerator()
    for level in (1, 2, 3):
        short = dump(generator.generate(level, 5, 15))
        assert short == dump(fresh.generate(level, 5, 40))[:15]


@pytest.mark.slow
def test_per_seed_capacity_is_reached_and_not_exceeded(generator, counter, monkeypatch):
    """Seed 1 gets exactly as many level-1 queries as its slot's scarcest fault allows."""
    monkeypatch.setattr(querygen, "MAX_KEY_REJECTIONS", 3000)
    slots = {op: [0] * SEED_SLOTS for op in KINDS}
    for kind in KINDS:
        for key in {s.key for s in counter.singles()[kind]}:
            slots[kind][key_slot(key)] += 1
    seed = 1
    cycle = ["+".join(c) for c in LEVELS[1]]
    limit = min(((j - seed) % 5) + slots[op][seed_slot(seed)] * 5 for j, op in enumerate(cycle))
    assert limit >= counter.level(1).per_seed
    queries = list(generator.generate(1, seed, limit))
    assert len({q.key for q in queries}) == limit
    with pytest.raises(CapacityExhausted) as err:
        list(generator.generate(1, seed, limit + 1))
    text = str(err.value)
    assert f"k8s level 1, seed {seed}: query k8s-L1-s{seed}-{limit:05d}" in text
    assert f"found {limit} distinct queries" in text
    assert f"Capacity: {counter.level(1).per_seed} per seed, exactly " in text


def test_allow_repeats_keeps_and_marks_repeats(generator):
    queries = list(generator.generate(1, 0, 400, allow_repeats=True))
    repeats = [q for q in queries if "repeat_of" in q.ground_truth]
    assert repeats
    by_id = {q.query_id: q for q in queries}
    for query in repeats:
        earlier = by_id[query.ground_truth["repeat_of"]]
        assert earlier.key == query.key and earlier.index < query.index


def test_balanced_per_seed_matches_a_simulation():
    per_slot = {"a": [3, 1, 4, 2], "b": [5, 5, 0, 9], "c": [2, 7, 1, 8]}
    cycle = ["a", "b", "c"]
    worst = None
    for seed in range(12):
        left = dict((op, per_slot[op][seed % SEED_SLOTS]) for op in cycle)
        n = 0
        while left[cycle[(n + seed) % 3]] > 0:
            left[cycle[(n + seed) % 3]] -= 1
            n += 1
        worst = n if worst is None else min(worst, n)
    assert balanced_per_seed(per_slot, cycle) == worst


def test_app_capacity_is_cached_and_checks_requests(tmp_path, counter):
    app = K8sApp(K8sConfig(), cache_dir=tmp_path)
    cap = app.capacity(1)
    assert list(tmp_path.glob("capacity-*-L1.json"))
    assert cached_capacity(1, K8sCapacity.__new__(K8sCapacity), tmp_path) == cap  # from disk
    check_request("k8s", 1, cap.per_seed, cap)
    with pytest.raises(ConfigError, match=rf"queries={cap.per_seed + 1} exceeds .* k8s level 1"):
        check_request("k8s", 1, cap.per_seed + 1, cap)
