"""The shared draw loop: keys, seed slots, repeats, the two budgets, and the plan-time
capacity check."""

from __future__ import annotations

import random

import pytest

from pipeline.capacity import Capacity, check_request
from pipeline.errors import ConfigError
from pipeline.querygen import (
    SEED_SLOTS,
    CapacityExhausted,
    KeyTracker,
    NoValidQuery,
    key_slot,
    query_key,
    seed_slot,
)

SPACE = 200  # draws are the numbers 0..199; multiples of 7 fail validation


def _draws(tracker: KeyTracker, count: int, built: list[int]) -> list[tuple[int, str]]:
    out = []
    for index in range(count):
        rng = random.Random(f"toy/{tracker.seed}/{index}")

        def draw(rng: random.Random = rng) -> tuple[str, int]:
            n = rng.randrange(SPACE)
            return query_key("toy", n), n

        def build(n: int) -> int | str:
            built.append(n)
            return "a multiple of 7" if n % 7 == 0 else n

        taken = tracker.take(index, draw, build, max_draws=5)
        out.append((taken.value, taken.key))
    return out


def test_keys_are_stable_hex_and_slots_partition_them():
    key = query_key({"b": 1, "a": [1, 2]}, "x")
    assert key == query_key({"a": [1, 2], "b": 1}, "x") and len(key) == 16
    int(key, 16)
    assert [seed_slot(s) for s in range(6)] == [0, 1, 2, 3, 0, 1]
    slots = {key_slot(query_key(n)) for n in range(100)}
    assert slots == set(range(SEED_SLOTS))


def test_seeds_take_distinct_keys_of_their_slot_until_the_capacity_error():
    valid = [n for n in range(SPACE) if n % 7]
    seen = {}
    for seed in range(SEED_SLOTS):
        mine = sum(1 for n in valid if key_slot(query_key("toy", n)) == seed_slot(seed))
        built: list[int] = []
        tracker = KeyTracker(
            "toy", 1, seed, capacity=lambda: Capacity(len(valid), {}, True, 33, how="counted")
        )
        got = _draws(tracker, mine, built)
        assert len({k for _, k in got}) == mine
        assert len(built) == len(set(built))  # a rejected draw is never validated twice
        for _, key in got:
            assert key_slot(key) == seed_slot(seed) and key not in seen
            seen[key] = seed
        with pytest.raises(CapacityExhausted) as err:
            tracker.take(mine, lambda: (query_key("toy", 7), 7), lambda n: n, max_draws=5)
        text = str(err.value)
        assert f"toy level 1, seed {seed}: query toy-L1-s{seed}-{mine:05d} (index {mine})" in text
        assert f"found {mine} distinct queries" in text
        assert "Capacity: 33 per seed, exactly 171 in all; counted" in text
    assert len(seen) == len(valid)


def test_validation_failures_have_their_own_small_budget():
    tracker = KeyTracker("toy", 2, 0)
    n = iter(range(10**6))
    with pytest.raises(NoValidQuery, match=r"no valid toy query toy-L2-s0-00000 .* in 5 draws"):
        tracker.take(0, lambda: (query_key(next(n)), 0), lambda _: "broken", max_draws=5)


def test_allow_repeats_takes_draws_as_drawn_and_marks_repeats():
    tracker = KeyTracker("toy", 1, 0, allow_repeats=True)
    taken = [tracker.take(i, lambda: (query_key(1), 1), lambda n: n, max_draws=1) for i in range(3)]
    assert [t.repeat_of for t in taken] == [None, "toy-L1-s0-00000", "toy-L1-s0-00000"]


def test_check_request_names_the_capacity():
    cap = Capacity(1113, {"RI": 182}, True, 165, {"RI": 38}, how="enumerated")
    check_request("k8s", 1, 165, cap)
    with pytest.raises(ConfigError) as err:
        check_request("k8s", 1, 500, cap)
    assert str(err.value).startswith(
        "queries=500 exceeds what one seed can get from k8s level 1: 165 per seed, exactly "
        "1,113 in all (per seed by operation: RI 38); enumerated. Ask for at most 165"
    )
    check_request("malt", 2, 10**9, Capacity(None, {}, False, None))
    assert Capacity.from_json(cap.to_json()) == cap


def test_an_environment_failure_is_retried_on_the_same_draw_never_held_against_it():
    """A build that raises EnvironmentFailure is the environment's fault: the same draw is
    built again (the stream draws nothing more), so the queries are those of a run where the
    environment never failed; past ENV_ATTEMPTS the failure propagates, no key marked
    invalid."""
    from pipeline.errors import EnvironmentFailure
    from pipeline.querygen import ENV_ATTEMPTS

    calm = _draws(KeyTracker("toy", 1, 0), 6, [])
    failures = iter([True, False, True, True, False] + [False] * 50)
    built: list[int] = []
    tracker = KeyTracker("toy", 1, 0)
    out = []
    for index in range(6):
        rng = random.Random(f"toy/0/{index}")

        def draw(rng: random.Random = rng) -> tuple[str, int]:
            n = rng.randrange(SPACE)
            return query_key("toy", n), n

        def build(n: int) -> int | str:
            built.append(n)
            if next(failures):
                raise EnvironmentFailure("the lab could not be reset (injected)")
            return "a multiple of 7" if n % 7 == 0 else n

        taken = tracker.take(index, draw, build, max_draws=5)
        out.append((taken.value, taken.key))
    assert out == calm and len(built) > len(calm)
    assert all("injected" not in why for why in tracker.invalid.values())

    def always(n: int) -> int:
        raise EnvironmentFailure("the lab is gone (injected)")

    stuck = KeyTracker("toy", 1, 0, allow_repeats=True)
    with pytest.raises(EnvironmentFailure, match=f"failed {ENV_ATTEMPTS} times"):
        stuck.take(0, lambda: (query_key("toy", 3), 3), always, max_draws=5)
    assert stuck.invalid == {} and stuck.taken == {}
