"""incidents: network incidents on FRR labs of every topology family (levels 6-8).

Under construction (issue 28): faults/kinds.py is the catalogue's contract.
"""

from pipeline.api import BenchSpec

# The live proof of the data-plane, L2 and services kinds (generators/incidents/faults/
# bench_dp.py), declared here because benchmarks are found in the apps' top-level
# packages; root, ~8 min: --only. (faults_rp's `incidents_catalogue` proves OSPF and BGP.)
BENCHES = [BenchSpec("incidents_catalogue_dp", ".faults.bench_dp:run_catalogue_dp")]
