"""Seeded microservice applications: call graphs with namespaces, realistic ports and protocols.

`generated(size, variant)` is one application of a size class, the same on every machine
(its own random stream, `k8s-app:<size>:<variant>`). Its parts, as a real shop, SaaS or
media platform is split:

  gateway    the edge (namespace `web`): HTTP, called by hosts outside the cluster
  services   business services spread over the middle namespaces, gRPC or HTTP, calling
             each other (a DAG: a service calls only later ones) and the data stores
  stores     databases, caches and brokers (namespace `data`) on their well-known ports
  workers    batch jobs without a Service, calling services or stores
  monitoring Prometheus (scrapes every workload's named `metrics` port across namespaces)
             and, from medium size on, a StatsD collector that takes UDP datagrams
  external   pods standing in for hosts outside the cluster, on EXTERNAL_CIDR: a load
             balancer (the gateway's client), a partner API (some services call it on
             443), and an admin host inside EXCLUDED_CIDR, which policies name in an
             ipBlock's `except`

Egress is locked down (only DNS and what a workload calls) in `data`, `monitoring` and
half of the middle namespaces (rounded down; `locked`); elsewhere a workload's egress is
open, as in clusters that restrict egress only where it matters.

Every workload is one Deployment with one Pod; workload names are unique across namespaces
(as are the policy names built from them), so a probe key names a workload unambiguously.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

SIZES = ("small", "medium", "large")
APPS_PER_SIZE = 3  # generated applications per size class (variants 0, 1, 2)
# size -> (middle namespaces, services, data stores, workers); the gateway comes on top.
SHAPES = {"small": (1, 3, 2, 1), "medium": (2, 6, 3, 1), "large": (3, 10, 5, 2)}
EDGE, DATA, MONITORING, EXTERNAL = "web", "data", "monitoring", "external"
MIDDLE = ("shop", "commerce", "billing", "identity", "content", "logistics", "platform")
EXTERNAL_CIDR = "10.244.0.192/26"  # hosts outside the cluster, as policies see them
EXCLUDED_CIDR = "10.244.0.248/29"  # the admin range inside it, excepted from the clients'
PARTNER_PORT = 443
METRICS = ("metrics", 9090)  # every service's, gateway's and worker's Prometheus port


@dataclass(frozen=True)
class Port:
    name: str  # the container port's name (IANA service name syntax)
    number: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class Call:
    target: str  # workload called (on its first port)
    named: bool  # its egress rule names the port ("grpc") rather than the number


@dataclass(frozen=True)
class Workload:
    name: str
    namespace: str
    role: str  # gateway, service, store, worker, prometheus, statsd, external
    ports: tuple[Port, ...]  # container ports; the first is the one its Service exposes
    service_port: int | None = None  # the Service's port (None: no Service)
    calls: tuple[Call, ...] = ()
    partner: bool = False  # calls the partner API outside the cluster (ipBlock egress)
    statsd: bool = False  # sends StatsD datagrams to the collector
    named_ingress: bool = True  # its ingress rule names the port rather than the number
    ip: str = ""


@dataclass(frozen=True)
class MicroApp:
    size: str
    variant: int
    namespaces: tuple[str, ...]  # the application's own namespaces, edge first
    workloads: tuple[Workload, ...]
    locked: frozenset[str] = frozenset()  # namespaces whose egress is locked down

    @functools.cached_property
    def by_name(self) -> dict[str, Workload]:
        return {w.name: w for w in self.workloads}

    def callers(self, name: str) -> list[Workload]:
        return [w for w in self.workloads if any(c.target == name for c in w.calls)]

    @property
    def app_workloads(self) -> list[Workload]:
        """The workloads of the application's own namespaces (what faults touch)."""
        return [w for w in self.workloads if w.namespace in self.namespaces]


# (name, style) of business services; a style is how it serves: gRPC or HTTP.
SERVICE_NAMES = (
    "catalog", "cart", "checkout", "orders", "payments", "shipping", "inventory",
    "pricing", "reviews", "search", "recommendations", "accounts", "auth",
    "notifications", "media", "ads", "currency", "quotes", "loyalty", "fraud",
)  # fmt: skip
GRPC_PORTS = (50051, 7070, 5050, 3550, 9555, 7000, 8443)
HTTP_PORTS = ((8080, 80), (3000, 80), (8000, 80), (5000, 80))  # (container, Service)
# (suffix, port name, port number) of data stores on their well-known ports.
STORES = (
    ("db", "postgres", 5432), ("mysql", "mysql", 3306), ("redis", "redis", 6379),
    ("mongo", "mongodb", 27017), ("kafka", "kafka", 9092), ("rabbitmq", "amqp", 5672),
    ("elasticsearch", "http", 9200), ("memcached", "memcache", 11211),
    ("cassandra", "cql", 9042),
)  # fmt: skip
WORKERS = ("email-worker", "report-cron", "indexer", "image-resizer", "sync-job")


def _service(rng: random.Random, name: str, namespace: str) -> Workload:
    if rng.random() < 0.55:
        port = Port("grpc", rng.choice(GRPC_PORTS))
        service_port = port.number
    else:
        number, service_port = rng.choice(HTTP_PORTS)
        port = Port("http", number)
    return Workload(
        name,
        namespace,
        "service",
        (port, Port(*METRICS)),
        service_port,
        named_ingress=rng.random() < 0.7,
    )


def _pick(rng: random.Random, pool: list[str], low: int, high: int) -> list[str]:
    return rng.sample(pool, min(len(pool), rng.randint(low, high))) if pool else []


def _call(rng: random.Random, target: str) -> Call:
    return Call(target, named=rng.random() < 0.5)


def generated(size: str, variant: int) -> MicroApp:
    """The application `variant` of size class `size` (see the module docstring)."""
    if size not in SHAPES:
        raise ValueError(f"size {size!r} is not one of {SIZES}")
    return _generated(size, variant)


@functools.cache
def _generated(size: str, variant: int) -> MicroApp:
    return build(random.Random(f"k8s-app:{size}:{variant}"), size, variant, SHAPES[size])


def build(
    rng: random.Random,
    size: str,
    variant: int,
    shape: tuple[int, int, int, int],
    metrics: Callable[[random.Random], bool] | None = None,
) -> MicroApp:
    """An application of `shape` (middle namespaces, services, stores, workers) drawn from
    `rng` (see `generated`); `metrics(rng)`, when given, says per worker whether it serves
    a `metrics` port (every worker does otherwise)."""
    n_middle, n_services, n_stores, n_workers = shape
    namespaces = (EDGE, *rng.sample(MIDDLE, n_middle), DATA)
    names = rng.sample(SERVICE_NAMES, n_services)
    services = [_service(rng, n, namespaces[1 + i % n_middle]) for i, n in enumerate(names)]
    stores = []
    for owner, (suffix, pname, number) in zip(
        rng.sample(names, n_stores), rng.sample(STORES, n_stores), strict=True
    ):
        stores.append(Workload(f"{owner}-{suffix}", DATA, "store", (Port(pname, number),), number))
    # Calls: the gateway -> 2-3 services; a service -> later services and stores; every
    # service and store has a caller.
    calls: dict[str, list[Call]] = {s.name: [] for s in services}
    front = rng.sample(names, min(len(names), rng.randint(2, 3)))
    gateway_calls = [_call(rng, n) for n in names if n in front]
    for i, svc in enumerate(services):
        later = [s.name for s in services[i + 1 :]]
        calls[svc.name] += [_call(rng, t) for t in _pick(rng, later, 0, 2)]
    for i, svc in enumerate(services):
        called = svc.name in front or any(c.target == svc.name for cs in calls.values() for c in cs)
        if not called and i == 0:
            gateway_calls.append(_call(rng, svc.name))
        elif not called:
            calls[rng.choice(names[:i])].append(_call(rng, svc.name))
    for store in stores:
        owner = store.name.rsplit("-", 1)[0]
        users = {owner, *_pick(rng, names, 0, 1)}
        for user in sorted(users):
            calls[user].append(_call(rng, store.name))
    partners = set(rng.sample(names, {"small": 1, "medium": 2, "large": 3}.get(size, 4)))
    statsd = size != "small"
    emitters = set(rng.sample(names, len(names) // 2)) if statsd else set()
    services = [
        replace(
            s,
            calls=tuple(sorted(calls[s.name], key=lambda c: c.target)),
            partner=s.name in partners,
            statsd=s.name in emitters,
        )
        for s in services
    ]
    workers = []
    targets = [*names, *(s.name for s in stores)]
    for name in rng.sample(WORKERS, n_workers):
        ns = rng.choice(namespaces[1:-1])
        picked = sorted(_pick(rng, targets, 1, 2))
        ports = (Port(*METRICS),) if metrics is None or metrics(rng) else ()
        workers.append(
            Workload(name, ns, "worker", ports, calls=tuple(_call(rng, t) for t in picked))
        )
    gateway = Workload(
        "gateway",
        EDGE,
        "gateway",
        (Port("http", 8080), Port(*METRICS)),
        80,
        tuple(sorted(gateway_calls, key=lambda c: c.target)),
    )
    monitoring = [Workload("prometheus", MONITORING, "prometheus", (Port("web", 9090),), 9090)]
    if statsd:
        monitoring.append(
            Workload("statsd", MONITORING, "statsd", (Port("statsd", 8125, "UDP"),), 8125)
        )
    external = [
        Workload("lb", EXTERNAL, "external", ()),
        Workload("partner-api", EXTERNAL, "external", (Port("https", PARTNER_PORT),)),
        Workload("admin-host", EXTERNAL, "external", (Port("ssh", 22),)),
    ]
    middle = list(namespaces[1:-1])
    locked = frozenset({DATA, MONITORING, *rng.sample(middle, len(middle) // 2)})
    return MicroApp(
        size,
        variant,
        namespaces,
        _addressed([gateway, *services, *stores, *workers], monitoring, external),
        locked,
    )


def _addressed(app: list[Workload], monitoring: list[Workload], external: list[Workload]):
    """Pod IPs: monitoring from .3, the application from .10, external hosts on
    EXTERNAL_CIDR (the load balancer .200, the partner API .210, the admin host .250)."""
    out = []
    for i, w in enumerate(monitoring):
        out.append(replace(w, ip=f"10.244.0.{3 + i}"))
    for i, w in enumerate(app):
        out.append(replace(w, ip=f"10.244.0.{10 + i}"))
    for w, last in zip(external, (200, 210, 250), strict=True):
        out.append(replace(w, ip=f"10.244.0.{last}"))
    return tuple(out)
