"""The MALT app: capacity planning on Google's MALT datacenter topology model.

Agents write `process_graph(graph)` against a networkx DiGraph of a MALT topology
(Google's example or a seeded synthetic one); answers are counts, names, lists,
rankings, tables or the modified graph. Modules: schema (kinds, hierarchy, conventions),
textproto (reader), topology (generator, cached loader), config, checker (safety),
graphdiff (canonical diffs), index (per-topology indices, analytic view), actions (query
specs and their analytic evaluator), levels (seeded drawing), render + prompt (prose),
oracle (ground-truth code), inprocess (running it), generator (validated queries),
scoring, app (the pipeline.core.App), bench (timings).

This package is imported by the sandbox's child processes (via graphdiff), so this file
must stay free of imports.
"""

APP_VERSION = "1"
