"""incidents: network incidents on FRR labs of every topology family (levels 6-8).

Under construction (issue 28): faults/kinds.py is the catalogue's contract.
"""

from pipeline.api import BenchSpec

# The fault catalogue's live proof (generators/incidents/faults/bench.py), declared here
# because benchmarks are found in the apps' top-level packages; root, ~10 min: --only.
BENCHES = [BenchSpec("incidents_catalogue", ".faults.bench:run_catalogue")]
