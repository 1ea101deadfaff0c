"""MALT's knobs independent of level (app.operations, app.size) and failure-driven sampling:
checked before any work, labelled cells, aimed mixes that repeat byte for byte, and
seeds drawn without them exactly as before."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from analysis.synthetic import cell_table
from generators.malt import APP_VERSION
from generators.malt.app import MaltApp
from generators.malt.config import SIZES, MaltConfig, TopologyConfig, size_class
from generators.malt.generator import MaltQueryGenerator
from generators.malt.operations import TEMPLATES, selects, tokens
from generators.malt.topology import synthetic_topology
from pipeline.cells import Cell, Layout, cell_from_config, data_root
from pipeline.config import compose
from pipeline.core import canonical_json
from pipeline.errors import ConfigError
from pipeline.generate import generate
from pipeline.records import read_shard, write_shard
from pipeline.variants import variant_of

SMALL = TopologyConfig(source="synthetic", seed=5, **SIZES["small"])
# tests/test_malt_queries.py's topology, and the digest of its first queries of levels 1-3,
# seeds 0 and 1, as generated before levels 4 and 5, the knobs and the weights existed.
GOLDEN = TopologyConfig(
    source="synthetic",
    seed=3,
    superblocks=2,
    aggs_per_superblock=2,
    spineblocks=2,
    switches_per_block_min=3,
    switches_per_block_max=6,
    ports_per_switch_min=2,
    ports_per_switch_max=5,
)
GOLDEN_DIGEST = "cea05df057662f5ba270581914636ac8a9fa7e9e0d30b18ca6545058418d811f"


@pytest.fixture(scope="module")
def graph():
    return synthetic_topology(SMALL)


def query_bytes(queries) -> list[str]:
    return [
        canonical_json([q.query_id, q.key, q.prompt, q.operation, q.ground_truth, q.size])
        for q in queries
    ]


# -- checked before any work -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["app.operations=[nope]"], r"app.operations holds unknown operations \['nope'\]"),
        (["app.operations=[]"], r"app.operations must be null or a non-empty list"),
        (["app.size=huge"], r"app.size must be null or one of \['small', 'medium', 'large'\]"),
        (["app.size=small", "app.topology.superblocks=3"], r"set either app.size or"),
    ],
)
def test_wrong_knobs_fail_at_composition(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose(["app=malt", *overrides])


def test_a_size_for_googles_file_is_refused():
    with pytest.raises(ConfigError, match=r"app.size=large applies to synthetic topologies only"):
        compose(["app=malt_google", "app.size=large"])


def test_operation_names_select_by_label_and_token():
    assert selects(None, "anything")
    assert selects(["add"], "add>count") and selects(["add"], "for_if(update|add)")
    assert not selects(["add"], "remove>count") and not selects(["add"], "expand")
    assert selects(["drain"], "drain") and selects(["drain"], "drain_balance")
    assert selects(["for_if"], "for_if(update|remove)") and not selects(["for"], "if(add|count)")
    assert tokens("upgrade_superblock") == {"upgrade", "superblock"}


# -- operations --------------------------------------------------------------------------------


def test_operations_select_the_templates_of_levels_4_and_5(graph):
    gen = MaltQueryGenerator(graph, "synthetic-knobs", operations=["drain", "place"])
    assert {q.operation for q in gen.generate(4, 0, 12)} == {"drain", "place"}
    assert {q.operation for q in gen.generate(5, 0, 12)} == {"drain_balance", "place_balance"}
    balance = MaltQueryGenerator(graph, "synthetic-knobs", operations=["balance"])
    assert {q.operation for q in balance.generate(5, 0, 8)} == {"drain_balance", "place_balance"}
    adds = MaltQueryGenerator(graph, "synthetic-knobs", operations=["add"])
    with pytest.raises(ConfigError, match=r"selects no operation of malt level 4"):
        next(adds.generate(4, 0, 1))


@pytest.mark.parametrize("level", [1, 2, 3])
def test_operations_select_the_labels_of_levels_1_to_3(graph, level):
    gen = MaltQueryGenerator(graph, "synthetic-knobs", operations=["add"])
    labels = [q.operation for q in gen.generate(level, 1, 12)]
    assert all("add" in tokens(label) for label in labels), labels
    capacity = __import__("generators.malt.capacity", fromlist=["measure"]).measure(
        gen, level, draws=3000, validate=300
    )
    assert capacity.by_operation and all("add" in tokens(op) for op in capacity.by_operation)


# -- size ----------------------------------------------------------------------------------


def test_size_classes_set_the_topology_and_label_the_queries(tmp_path):
    assert [size_class(n) for n in (500, 1_999, 2_000, 9_999, 10_000)] == [
        "small",
        "small",
        "medium",
        "medium",
        "large",
    ]
    cfg = MaltConfig(topology=TopologyConfig(source="synthetic"), size="small")
    app = MaltApp(cfg, tmp_path)
    graph, _ = app.topology()
    assert graph.number_of_nodes() < 2_000
    assert {q.size for q in app.generate(4, 0, 3)} == {"small"}
    medium = MaltApp(MaltConfig(topology=TopologyConfig(source="synthetic")), tmp_path)
    assert next(medium.generate(1, 0, 1)).size == "medium"  # drawn without the knob: classed


def test_a_multirun_over_the_knobs_makes_separate_labelled_cells():
    """`-m app=malt app.size=small,large app.operations=[add],[rank]`: four cells, each a
    variant of its own whose label names both settings, with queries of their own."""
    cells = {}
    for size in ("small", "large"):
        for ops in ("[add]", "[rank]"):
            cfg = compose(["app=malt", f"app.size={size}", f"app.operations={ops}"])
            variant = variant_of(cfg)
            assert f"app.size={json.dumps(size)}" in variant.label
            assert f"app.operations={json.dumps([ops[1:-1]])}" in variant.label
            cells[cell_from_config(cfg).part] = variant.app_variant
    assert len(cells) == 4 and len(set(cells.values())) == 4


# -- weights -------------------------------------------------------------------------------


def test_without_weights_seeds_draw_exactly_as_before():
    """Byte for byte the queries of app version 3 but for the version they carry (4 changed
    how a graph answer is judged, not what is drawn): the pinned digest is version 3's."""
    gen = MaltQueryGenerator(synthetic_topology(GOLDEN), "synthetic-test")
    digest = hashlib.sha256()
    for level in (1, 2, 3):
        for seed in (0, 1):
            for q in gen.generate(level, seed, 12, weights=None):
                assert q.ground_truth["app_version"] == APP_VERSION
                truth = {**q.ground_truth, "app_version": "3"}
                fields = [q.query_id, q.key, q.prompt, q.answer_type, q.operation]
                digest.update(canonical_json([*fields, truth, q.env_key]).encode())
    assert digest.hexdigest() == GOLDEN_DIGEST


@pytest.mark.parametrize(("level", "favoured"), [(1, "rank"), (4, "drain"), (5, "expand_fill")])
def test_weights_shift_the_mix_and_repeat_byte_for_byte(graph, level, favoured):
    gen = MaltQueryGenerator(graph, "synthetic-knobs")
    uniform = Counter(q.operation for q in gen.generate(level, 2, 32))
    weights = {favoured: 20.0}  # every other label keeps weight 1
    aimed = list(gen.generate(level, 2, 32, weights=weights))
    mix = Counter(q.operation for q in aimed)
    assert mix[favoured] >= uniform[favoured] + 8, (uniform, mix)
    again = MaltQueryGenerator(graph, "synthetic-knobs").generate(level, 2, 32, weights=weights)
    assert query_bytes(again) == query_bytes(aimed)


def earlier_run(data: Path, level: int, failing: str) -> None:
    """An episodes shard of an earlier run at `level` in which `failing` failed 9 times in
    10 and every other operation once in 10."""
    cell = Cell("malt", "smollm2", "zero_shot", level, 0, 80)
    table = cell_table(cell, 1.0, np.random.default_rng(0), operations=TEMPLATES[level])
    seen: Counter[str] = Counter()
    correct = []
    for op in table.column("operation").to_pylist():
        seen[op] += 1
        correct.append((seen[op] % 10 != 0) != (op == failing))  # 1 in 10 goes the other way
    index = table.schema.get_field_index("correct")
    table = table.set_column(index, table.schema.field(index), pa.array(correct, pa.bool_()))
    write_shard("episodes", table, Layout(data_root(data)).episodes(cell), config_hash="synthetic")


def test_focus_from_an_earlier_run_aims_generation_and_is_recorded(tmp_path):
    earlier = tmp_path / "earlier"
    earlier_run(earlier, 4, "upgrade")
    base = ["app=malt", "app.size=small", "level=4", "queries=40"]
    rows = {}
    for name, extra in (
        ("uniform", []),
        ("aimed", [f"focus.results={earlier}", "focus.agent=smollm2/zero_shot"]),
        ("again", [f"focus.results={earlier}", "focus.agent=smollm2/zero_shot"]),
    ):
        data = tmp_path / name
        path = generate(compose([*base, *extra, f"data_dir={data}"]))
        rows[name] = read_shard("queries", path).to_pylist()
    mix = {name: Counter(r["operation"] for r in table) for name, table in rows.items()}
    assert mix["aimed"]["upgrade"] >= mix["uniform"]["upgrade"] + 10, mix
    assert {r["focus"] for r in rows["uniform"]} == {""}
    focus = json.loads(rows["aimed"][0]["focus"])
    assert focus["results"] == str(earlier.resolve()) and focus["agent"] == "smollm2/zero_shot"
    assert focus["weights"]["upgrade"] > 5 * focus["weights"]["drain"]
    assert rows["again"] == rows["aimed"]
