"""The reply fuzzer: hostile replies through every app's step and every agent door.

grammar.py         seeded, grammar-aware mutation of replies (values, JSON, argv, vtysh
                   lines, YAML, Python); corpus.py holds what it draws from
targets.py         every app at its levels, with queries that need no live validation
harness.py         plays mutated replies through an app's live episodes and checks the
                   property: no exception leaves a step, a diagnostic, a reset or the
                   scorer; every step has a typed status with a reason; the
                   environment stays usable
doors.py           the LLM agent's doors (text, JSON schema, tools) fed hostile
                   streams; protocol_doors.py the MCP and A2A doors: each turn is a
                   reply or a typed failure, never an exception
peers.py           the hostile peers the doors talk to (loopback HTTP servers)
run.py             one app's doors, then its live episodes with the doors' replies: what
                   CI runs on a fixed seeded budget (tests/test_fuzz.py) and
                   `python -m pipeline.bench --only fuzz` at length
"""
