"""The FRR labs' fault catalogue: one module per family, each registering its kinds.

kinds.py fixes the contract (FaultKind, Fault, Injection, Evidence, Cause, the registry).
Every family module (ospf, bgp, dataplane, l2, services, benign) is imported here, so the
registry is complete as soon as any module of this package is imported.
"""

import generators.incidents.faults.benign_dp  # noqa: F401
import generators.incidents.faults.bgp  # noqa: F401
import generators.incidents.faults.bgp_policy  # noqa: F401
import generators.incidents.faults.bgp_routes  # noqa: F401
import generators.incidents.faults.dataplane  # noqa: F401
import generators.incidents.faults.dataplane_edge  # noqa: F401
import generators.incidents.faults.dp_benign  # noqa: F401
import generators.incidents.faults.l2  # noqa: F401
import generators.incidents.faults.ospf  # noqa: F401
import generators.incidents.faults.ospf_paths  # noqa: F401
import generators.incidents.faults.ospf_process  # noqa: F401
import generators.incidents.faults.policy_dp  # noqa: F401
import generators.incidents.faults.routing_benign  # noqa: F401
import generators.incidents.faults.services  # noqa: F401
