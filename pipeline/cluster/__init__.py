"""A throwaway SLURM cluster on this machine, for trying and testing the cluster path.

One controller (slurmctld), `nodes` slurmd daemons with distinct node names (ng1, ng2, ...:
SLURM's multiple-slurmd mode, one port each), munge, and accounting (slurmdbd on a MariaDB
of its own), all as root, in a private state directory, on ports the kernel picks, with
configs NetGauge writes (never /etc/slurm or /etc/munge). Clients reach it through
`SLURM_CONF` and wrappers of the client commands put first on `PATH`
(`LocalCluster.env`, or `eval "$(scripts/local-slurm.sh env)"`).

    python -m pipeline.cluster start | stop | status | env   # scripts/local-slurm.sh

Modules: `layout` (where every file lives, the generated configs), `daemons` (starting,
checking and stopping the daemons; finding what a cluster left behind), `keeper` (the
process that owns a running cluster, and `LocalCluster`, the context manager tests use),
`accounting` (the controller's records of jobs, read with sacct).
"""

from pipeline.registry import BenchSpec

BENCHES = [BenchSpec("slurm", ".bench:run_all")]
