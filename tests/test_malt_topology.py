"""Synthetic MALT topologies and the MALT app config."""

from __future__ import annotations

from pathlib import Path

import pytest

from generators.malt import schema as S
from generators.malt.checker import check_graph
from generators.malt.config import MaltConfig, TopologyConfig, validate_config
from generators.malt.topology import load_topology, synthetic_topology
from pipeline.core import canonical_json
from pipeline.errors import ConfigError
from pipeline.files import TEMPORARY_GLOB

SMALL = {
    "source": "synthetic",
    "superblocks": 2,
    "aggs_per_superblock": 2,
    "spineblocks": 1,
    "switches_per_block_min": 2,
    "switches_per_block_max": 4,
    "ports_per_switch_min": 1,
    "ports_per_switch_max": 3,
}


def graph_bytes(graph) -> str:
    nodes = [[n, a] for n, a in graph.nodes(data=True)]
    edges = [[u, v, a] for u, v, a in graph.edges(data=True)]
    return canonical_json({"nodes": nodes, "edges": edges})


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_small_synthetic_topologies_are_safe_and_follow_the_hierarchy(seed):
    graph = synthetic_topology(TopologyConfig(seed=seed, **SMALL))
    assert check_graph(graph) == []
    for u, v, attrs in graph.edges(data=True):
        ku, kv = set(graph.nodes[u]["type"]), set(graph.nodes[v]["type"])
        if u != v:
            assert attrs["type"] == [S.RK_CONTAINS]
            assert any(kv & S.CONTAINS.get(k, set()) for k in ku), (u, v)
        else:
            assert attrs["type"] == [S.RK_CONTAINS, S.RK_CONTROLS]
    for name, attrs in graph.nodes(data=True):
        assert attrs["name"] == name
        assert attrs["type"] == sorted(attrs["type"])


def test_default_synthetic_size_is_about_googles_example():
    graph = synthetic_topology(TopologyConfig(source="synthetic"))
    assert 4500 <= graph.number_of_nodes() <= 6500
    assert check_graph(graph) == []
    devices = [n for n, a in graph.nodes(data=True) if S.EK_PACKET_SWITCH in a["type"]]
    assert all(graph.nodes[d]["type"] == list(S.DEVICE_KINDS) for d in devices)
    assert all(graph.has_edge(d, d) for d in devices)
    assert graph.nodes["ju1.a1.m1.s2c1"]["switch_loc"] == {"stage": 2}
    assert graph.has_edge("ju1.a1.m1rack", "ju1.a1.m1.s2c1")
    assert graph.has_edge("ju1.a1.dom", "ju1.a1.m1.s2c1")


def test_same_seed_same_bytes_other_seed_other_bytes():
    one = graph_bytes(synthetic_topology(TopologyConfig(seed=7, **SMALL)))
    assert one == graph_bytes(synthetic_topology(TopologyConfig(seed=7, **SMALL)))
    assert one != graph_bytes(synthetic_topology(TopologyConfig(seed=8, **SMALL)))


def test_load_topology_ids_follow_seed_and_knobs(tmp_path: Path):
    g1, id1 = load_topology(TopologyConfig(seed=1, **SMALL), tmp_path)
    g1b, id1b = load_topology(TopologyConfig(seed=1, **SMALL), tmp_path)
    _, id2 = load_topology(TopologyConfig(seed=2, **SMALL), tmp_path)
    _, id3 = load_topology(TopologyConfig(seed=1, **{**SMALL, "spineblocks": 2}), tmp_path)
    assert id1 == id1b and id1.startswith("synthetic-")
    assert len({id1, id2, id3}) == 3
    assert graph_bytes(g1) == graph_bytes(g1b)
    assert len(list(tmp_path.glob("*.pkl"))) == 3
    assert not list(tmp_path.glob(TEMPORARY_GLOB))


def test_config_defaults_validate():
    validate_config(MaltConfig())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": "csv"}, r"app.topology.source must be one of \['synthetic', 'file'\]"),
        ({"superblocks": 0}, r"app.topology.superblocks must be an integer >= 1"),
        ({"seed": -1}, r"app.topology.seed must be an integer >= 0"),
        (
            {"ports_per_switch_min": 5, "ports_per_switch_max": 2},
            r"app.topology.ports_per_switch_min \(5\) must not exceed",
        ),
        ({"port_capacities_bps": []}, r"app.topology.port_capacities_bps must list"),
    ],
)
def test_config_errors_name_the_key(change, message):
    cfg = MaltConfig(topology=TopologyConfig(**change))
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)


def test_config_errors_for_turns_and_sandbox():
    with pytest.raises(ConfigError, match=r"app\.max_turns must be an integer >= 1"):
        validate_config(MaltConfig(max_turns=0))
    cfg = MaltConfig()
    cfg.sandbox.wall_timeout_s = -1
    with pytest.raises(ConfigError, match=r"app\.sandbox\.wall_timeout_s must be a positive"):
        validate_config(cfg)


def test_config_is_an_omegaconf_structured_schema():
    omegaconf = pytest.importorskip("omegaconf")
    cfg = omegaconf.OmegaConf.structured(MaltConfig)
    merged = omegaconf.OmegaConf.merge(cfg, {"topology": {"source": "synthetic", "seed": 3}})
    validate_config(merged)
    assert merged.topology.seed == 3
    with pytest.raises(omegaconf.errors.ValidationError):
        omegaconf.OmegaConf.merge(cfg, {"topology": {"seed": "many"}})
