"""Generated FRR labs: the topology families, their NetSpec, and how they are rendered.

Not an app (no APP here): the `incidents` app (levels 6-8) and its fault catalogue build
on it. `build(family, size, variant)` gives one NetSpec (spec.py: the types and the naming
and addressing schemes), the same on every machine. Modules: spec (types), naming,
addressing, catalogue (`build`), builder and wiring (names, addresses and descriptions of
what a family adds), families (chain, ring, mesh, leafspine), campus, isp, intents (path
and ECMP intents from the spec's costs), checks (invariants), render (`to_lab()`: the
emulators/base.py Lab), frrconf (FRR configuration per router and daemon), frrcheck (the
daemons' own dry-run over rendered configuration), describe (the prompt's inventory and
intent text), live (build, start FRR, converge by state, probe), bench (`netlab_sizes`).
"""

from generators.netlab.catalogue import build
from generators.netlab.spec import FAMILIES, SIZES, VARIANTS, NetSpec
from pipeline.api import BenchSpec

__all__ = ["FAMILIES", "SIZES", "VARIANTS", "NetSpec", "build"]

BENCHES = [BenchSpec("netlab_sizes", ".bench:run_sizes")]  # root, ~5 min: not in `make bench`
