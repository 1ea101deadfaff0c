"""MALT topologies: a seeded generator of MALT-shaped graphs and a cached loader.

Synthetic naming follows Google's example: Jupiter `ju<j>`; superblock `ju<j>.a<s>`;
aggregation block `ju<j>.a<s>.m<m>`; spine block `ju<j>.s<k>`; switch device
`<block>.s<stage>c<c>` (a chassis, control point and packet switch sharing the name);
port `<switch>.p<p>`; rack `<block>rack` (one per block, holding its chassis); control
domain `ju<j>.a<s>.dom` per superblock and `ju<j>.s<k>.dom` per spine block.
Aggregation switches are stages 2 and 3, spine switches stages 1 and 2.

Topology ids are `<source>-<hash>`: the hash covers the graph conventions version, the
source and its parameters (and the file content for files), so equal ids mean equal graphs.
"""

from __future__ import annotations

import hashlib
import pickle
import random
from pathlib import Path

import networkx as nx

from generators.malt import schema as S
from generators.malt.config import TopologyConfig, validate_topology_config
from generators.malt.textproto import graph_from_bytes
from pipeline.api import DataError, canonical_json, write_whole

# Bump when the graph conventions (schema.py, the reader or the generator) change.
TOPOLOGY_FORMAT = "1"
DEFAULT_FILE = Path("malt") / "malt-example-final.textproto"

_SIZE_KEYS = (
    "jupiters",
    "superblocks",
    "aggs_per_superblock",
    "spineblocks",
    "switches_per_block_min",
    "switches_per_block_max",
    "ports_per_switch_min",
    "ports_per_switch_max",
    "port_capacities_bps",
)


def _add_block_switches(
    graph: nx.DiGraph,
    rng: random.Random,
    cfg: TopologyConfig,
    block: str,
    domain: str,
    stages: tuple[int, int],
) -> None:
    rack = f"{block}rack"
    graph.add_node(rack, **{S.A_NAME: rack, S.A_TYPE: [S.EK_RACK]})
    count = rng.randint(cfg.switches_per_block_min, cfg.switches_per_block_max)
    low_stage = (count + 1) // 2
    caps = [int(c) for c in cfg.port_capacities_bps]
    for i in range(count):
        stage, index = (stages[0], i + 1) if i < low_stage else (stages[1], i - low_stage + 1)
        switch = f"{block}.s{stage}c{index}"
        graph.add_node(switch, **S.switch_attrs(switch, stage, S.DEVICE_KINDS))
        graph.add_edge(switch, switch, **{S.A_TYPE: [S.RK_CONTAINS, S.RK_CONTROLS]})
        for parent in (block, rack, domain):
            graph.add_edge(parent, switch, **S.contains_edge())
        # Most ports of a switch run at its line rate; a few differ (breakouts, upgrades).
        line_rate = rng.choice(caps)
        for p in range(1, rng.randint(cfg.ports_per_switch_min, cfg.ports_per_switch_max) + 1):
            port = f"{switch}.p{p}"
            cap = line_rate if rng.random() < 0.75 else rng.choice(caps)
            graph.add_node(port, **S.port_attrs(port, cap))
            graph.add_edge(switch, port, **S.contains_edge())


def synthetic_topology(cfg: TopologyConfig) -> nx.DiGraph:
    """A MALT-shaped graph drawn with `random.Random(cfg.seed)` (same config -> same graph)."""
    validate_topology_config(cfg)
    rng = random.Random(f"malt-topology:{cfg.seed}")
    graph = nx.DiGraph()

    def node(name: str, kind: str) -> str:
        graph.add_node(name, **{S.A_NAME: name, S.A_TYPE: [kind]})
        return name

    for j in range(1, cfg.jupiters + 1):
        jupiter = node(f"ju{j}", S.EK_JUPITER)
        for s in range(1, cfg.superblocks + 1):
            superblock = node(f"{jupiter}.a{s}", S.EK_SUPERBLOCK)
            graph.add_edge(jupiter, superblock, **S.contains_edge())
            domain = node(f"{superblock}.dom", S.EK_CONTROL_DOMAIN)
            for m in range(1, cfg.aggs_per_superblock + 1):
                block = node(f"{superblock}.m{m}", S.EK_AGG_BLOCK)
                graph.add_edge(superblock, block, **S.contains_edge())
                _add_block_switches(graph, rng, cfg, block, domain, (2, 3))
        for k in range(1, cfg.spineblocks + 1):
            block = node(f"{jupiter}.s{k}", S.EK_SPINEBLOCK)
            graph.add_edge(jupiter, block, **S.contains_edge())
            domain = node(f"{block}.dom", S.EK_CONTROL_DOMAIN)
            _add_block_switches(graph, rng, cfg, block, domain, (1, 2))
    return graph


def resolve_path(cfg: TopologyConfig, shared_data_dir: Path | None) -> Path:
    """The text-proto file a source=file config names."""
    if cfg.path is not None:
        return Path(cfg.path)
    if shared_data_dir is None:
        raise DataError(
            "app.topology.path is not set and no shared data directory was given; "
            "set app.topology.path=<file.textproto> or app.topology.source=synthetic"
        )
    return Path(shared_data_dir) / DEFAULT_FILE


def _hash(value: object) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def _read_cache(path: Path) -> nx.DiGraph | None:
    try:
        with path.open("rb") as src:
            graph = pickle.load(src)  # our own cache directory: trusted input
    except FileNotFoundError:
        return None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None  # a stale or damaged cache entry is rebuilt, not fatal
    return graph if isinstance(graph, nx.DiGraph) else None


def load_topology(
    cfg: TopologyConfig, cache_dir: Path, shared_data_dir: Path | None = None
) -> tuple[nx.DiGraph, str]:
    """Load (or generate) the topology a config names; return (graph, topology_id).

    Graphs are cached as pickles under `cache_dir`, keyed by a hash of the conventions
    version, the source and its parameters, and (for files) the file's SHA-256.
    """
    validate_topology_config(cfg)
    if cfg.source == "file":
        path = resolve_path(cfg, shared_data_dir)
        try:
            content = path.read_bytes()
        except FileNotFoundError as exc:
            raise DataError(
                f"MALT topology file not found: {path}; set app.topology.path=<file.textproto> "
                "or app.topology.source=synthetic"
            ) from exc
        except OSError as exc:
            raise DataError(f"cannot read MALT topology file {path}: {exc}") from exc
        params: dict[str, object] = {"sha256": hashlib.sha256(content).hexdigest()}
    else:
        content = b""
        params = {key: getattr(cfg, key) for key in _SIZE_KEYS}
        params["port_capacities_bps"] = [int(c) for c in cfg.port_capacities_bps]
        params["seed"] = cfg.seed
    key = _hash({"format": TOPOLOGY_FORMAT, "source": cfg.source, "params": params})
    topology_id = f"{cfg.source}-{key[:12]}"
    cache_file = Path(cache_dir) / f"malt-topology-{key[:32]}.pkl"
    graph = _read_cache(cache_file)
    if graph is None:
        if cfg.source == "file":
            graph = graph_from_bytes(content, str(path))
        else:
            graph = synthetic_topology(cfg)
        write_whole(cache_file, pickle.dumps(graph, protocol=pickle.HIGHEST_PROTOCOL))
    return graph, topology_id
