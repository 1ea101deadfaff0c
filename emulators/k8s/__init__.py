"""An emulated Kubernetes cluster for NetworkPolicy troubleshooting, driven by the real kubectl.

Modules: policy (pure NetworkPolicy semantics, the oracle's evaluator), selectors (label
selectors), patch (JSON, merge and strategic merge patches), schema (defaulting, strict
decoding and validation with the API server's wording), writes (what a write stores: a
patch applied, server-owned metadata set), store (objects, versions),
tables (server-side printing), discovery (discovery and OpenAPI documents), apiserver
(the HTTP API server), netns (namespaces, links), enforce (policies compiled to
iptables), dataplane (listeners, DNS stand-in, probes), kubectl (the sandboxed client),
cluster (all of it as one context manager), bench (timings).

Naming scheme: every Linux network namespace an instance creates is called
`ngkk<pid:x>x<instance>-<role>` (role `node`, or the pod index), so leftovers of a killed
run are found by prefix and the owning pid; interfaces live only inside those namespaces.
"""
