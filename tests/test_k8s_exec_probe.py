"""The exec probe's grammar, hostile (levels 6-8): `kubectl exec POD -- probe HOST:PORT` is
the one exec form a cluster with the probe accepts, read by the flag grammar as kubectl
reads it; every other form, spelling or payload is refused with its reason, and clusters
without the probe refuse exec as before. Pure: no cluster runs (tests/test_k8s_tiers_live.py
sends probes through one)."""

from __future__ import annotations

import pytest

from emulators.k8s import execprobe, flags
from emulators.k8s.kubectl import Refused, check, parse


def _request(line: str, stdin: str = "") -> execprobe.ProbeRequest:
    cmd = parse(line, stdin)
    assert check(cmd, exec_probe=True) == "exec"
    return execprobe.request(flags.check(cmd.argv, set(), exec_probe=True))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("kubectl exec -n shop cart-7f -- probe cart.shop:7070",
         ("pod", "cart-7f", "shop", None, "cart.shop", False, 7070, "TCP")),
        ("kubectl exec cart-7f -n shop -- probe 10.244.0.5:53/udp",
         ("pod", "cart-7f", "shop", None, "10.244.0.5", True, 53, "UDP")),
        ("kubectl exec deploy/cart -nshop -c server -- probe CART:7070/TCP",
         ("deployment", "cart", "shop", "server", "cart", False, 7070, "TCP")),
        ("kubectl -n web exec -q pod/gateway-1 -- probe a.b.svc.cluster.local.:1",
         ("pod", "gateway-1", "web", None, "a.b.svc.cluster.local", False, 1, "TCP")),
        ("kubectl exec --namespace=data x -- probe 10.96.0.10:65535/Udp",
         ("pod", "x", "data", None, "10.96.0.10", True, 65535, "UDP")),
    ],
)  # fmt: skip
def test_the_probe_form_is_read_as_kubectl_reads_it(line, expected):
    req = _request(line)
    got = (req.kind, req.name, req.namespace, req.container, req.host, req.is_ip, req.port,
           req.protocol)  # fmt: skip
    assert got == expected


HOSTILE = [
    ("kubectl exec -it cart -- probe a:1", "-i"),
    ("kubectl exec -i cart -- probe a:1", "there is no terminal"),
    ("kubectl exec --tty cart -- probe a:1", "there is no terminal"),
    ("kubectl exec cart probe a:1", "put `--` before the command"),
    ("kubectl exec cart -- sh -c id", "no shell or other program"),
    ("kubectl exec cart -- /bin/probe a:1", "no shell or other program"),
    ("kubectl exec cart -- probe", "one target"),
    ("kubectl exec cart -- probe a:1 b:2", "one target"),
    ("kubectl exec cart -- probe a:1 --udp", "one target"),
    ("kubectl exec cart -- probe a", "HOST:PORT"),
    ("kubectl exec cart -- probe a:0", "between 1 and 65535"),
    ("kubectl exec cart -- probe a:65536", "between 1 and 65535"),
    ("kubectl exec cart -- probe a:123456", "HOST:PORT"),
    ("kubectl exec cart -- probe a:-1", "HOST:PORT"),
    ("kubectl exec cart -- probe a:1/sctp", "tcp or udp"),
    ("kubectl exec cart -- probe a:1/icmp", "tcp or udp"),
    ("kubectl exec cart -- probe [::1]:80", "HOST:PORT"),
    ("kubectl exec cart -- probe 10.0.0.256:80", "neither an IPv4 address nor a DNS name"),
    ("kubectl exec cart -- probe 010.1.1.1:80", "neither an IPv4 address nor a DNS name"),
    ("kubectl exec cart -- probe a_b:80", "neither an IPv4 address nor a DNS name"),
    ("kubectl exec cart -- probe -a.b:80", "neither an IPv4 address nor a DNS name"),
    ("kubectl exec cart -- probe a..b:80", "neither an IPv4 address nor a DNS name"),
    ("kubectl exec cart -- probe " + "a" * 64 + ".b:80", "neither an IPv4 address"),
    ("kubectl exec cart -- probe " + ".".join(["abcdefghij"] * 24) + ":80", "HOST:PORT"),
    ("kubectl exec cart -- probe a\u00a0b:80", "HOST:PORT"),
    ("kubectl exec cart -- probe ünï.code:80", "neither an IPv4 address nor a DNS name"),
    ("kubectl exec -- probe a:1", "exactly one pod"),
    ("kubectl exec a b -- probe a:1", "exactly one pod"),
    ("kubectl exec svc/cart -- probe a:1", "not in 'svc'"),
    ("kubectl exec node/n1 -- probe a:1", "not in 'node'"),
    ("kubectl exec ../etc -- probe a:1", "not in '..'"),
    ("kubectl exec pod/../x -- probe a:1", "not a pod or deployment name"),
    ("kubectl exec pod/ -- probe a:1", "not a pod or deployment name"),
    ("kubectl exec Cart -- probe a:1", "not a pod or deployment name"),
    ("kubectl exec cart -n Bad_Ns -- probe a:1", "not a namespace name"),
    ("kubectl exec cart -c '' -- probe a:1", "not a container name"),
    ("kubectl exec cart --kubeconfig=/tmp/k -- probe a:1", "the kubeconfig is fixed"),
    ("kubectl exec cart -s http://x -- probe a:1", "the API server is fixed"),
    ("kubectl exec cart --as admin -- probe a:1", "impersonation"),
    ("kubectl exec cart -f pod.yaml -- probe a:1", "-f is not available"),
    ("kubectl exec cart --pod-running-timeout=1s -- probe a:1", "pods are running already"),
    ("kubectl exec cart -- probe a:1; id", "shell operators"),
    ("kubectl exec cart -- probe a:1 | tee x", "shell operators"),
    ("kubectl exec cart -- probe $(id):1", "command substitution"),
    ("kubectl exec cart -- probe `id`:1", "command substitution"),
    ("kubectl exec cart -- probe a:1 > /tmp/x", "shell operators"),
    ("kubectl exec -A cart -- probe a:1", "-A is not available"),
]


@pytest.mark.parametrize(("line", "needle"), HOSTILE, ids=[h[0][:60] for h in HOSTILE])
def test_every_other_form_is_refused_with_its_reason(line, needle):
    with pytest.raises(Refused, match=needle.replace("[", r"\[").replace("$", r"\$")):
        _request(line)


def test_the_probe_reads_no_input_and_other_clusters_refuse_exec():
    with pytest.raises(Refused, match="reads no input"):
        _request("kubectl exec cart -- probe a:1", stdin="x")
    for line in ("kubectl exec cart -- probe a:1", "kubectl exec -it cart -- sh"):
        with pytest.raises(Refused, match="`kubectl exec` is not available"):
            check(parse(line))


def test_names_are_looked_up_as_a_pods_resolver_would():
    assert execprobe.candidates("cart", "shop") == [
        "cart.shop.svc.cluster.local", "cart.svc.cluster.local", "cart.cluster.local", "cart",
    ]  # fmt: skip
    req = _request("kubectl exec x -- probe cart.shop:7070")
    text, code = execprobe.report("x-1", "web", req, "cart.shop.svc.cluster.local", None,
                                  "no such name (NXDOMAIN)")  # fmt: skip
    assert code == 1 and "lookup cart.shop: no such name" in text
