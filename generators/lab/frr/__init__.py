"""FRR labs kept warm, shared by the apps whose networks run FRR (routing levels 4-5 and
what builds on it): the daemons in their jails (daemons), in-process vty sessions (vty),
the routing state read from the daemons and netlink (reading), configuration differences
(confdiff), the warm lab itself (warm: build, converge, settle, restore) and the pool that
lends labs out and shares them within a process (pool).
"""
