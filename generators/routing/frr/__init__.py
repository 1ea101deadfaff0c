"""Routing levels 4 and 5: OSPF (and BGP at L5) on real FRR routers, in a Mininet lab.

Modules: topology (routers in a chain, their LANs and FRR configs), daemons (zebra,
ospfd, bgpd per router, each confined by bubblewrap to its router's own folders), lab
(a running FRR lab: build, converge, inject, settle, reset), faults (OSPF, BGP and
data-plane faults with their trusted injections and the oracle's vtysh fixes), generator
(seeded draws, validated live) and episode (one query played).
"""
