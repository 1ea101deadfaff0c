"""k8s app, hostile: what an attacker sends as kubectl replies, through live episodes on a real
emulated cluster with the real kubectl and data plane.

Every reply must end as a specific typed step with its reason, and the cluster must still
take the next write and enforce it. `tests.k8s_world` checks, once both clusters have
stopped, that the host (network, /proc/sys, files under /tmp /root /etc, processes) is as
it was, that nothing reached a server on the host's loopback and no marker file appeared.
The operating-system layer is attacked on its own in tests/test_k8s_jail.py.
"""

from __future__ import annotations

import json
import resource

import pytest
import yaml

from generators.k8s import boutique, reply
from pipeline.core import StepStatus
from tests.k8s_world import MARK, hostile_world, kubeconfig

pytestmark = pytest.mark.integration

POLICY = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "adservice"},
    "spec": {"podSelector": {"matchLabels": {"app": "adservice"}}},
}


def _policy(spec_extra: dict) -> str:
    body = json.loads(json.dumps(POLICY))
    body["spec"].update(spec_extra)
    return yaml.safe_dump(body)


KUBECONFIG = kubeconfig(exec_cmd="/bin/sh")
KUBERC = "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\naliases: []\n"
B, E, P, R, OK = (
    StepStatus.BLOCKED,
    StepStatus.EXEC_ERROR,
    StepStatus.PARSE_ERROR,
    StepStatus.RESOURCE_LIMIT,
    StepStatus.OK,
)


def say(command: str, stdin: str = "", **files: str) -> str:
    out: dict = {"command": command}
    if stdin:
        out["stdin"] = stdin
    if files:
        out["files"] = {k.replace("_", "."): v for k, v in files.items()}
    return json.dumps(out)


REFUSED_VERBS = [
    "exec -it frontend -- sh", "logs deploy/frontend", "attach frontend", "proxy",
    "port-forward svc/frontend 8080:80", "run evil --image=busybox", "debug node/x -it",
    "cp frontend:/etc/passwd .", "auth can-i '*' '*'", "config view --raw", "plugin list",
    "kustomize .", "certificate approve x", "drain node", "cordon node", "taint nodes x k=v:X",
    "scale deploy/frontend --replicas=0", "rollout restart deploy/frontend",
    "set image deploy/x a=b", "expose deploy/frontend", "autoscale deploy/x --max=2",
    "top pods", "cluster-info dump",
    "completion bash", "alpha", "wait --for=delete pod/x", "evilplugin", "krew install x",
]  # fmt: skip
# (command, needle): refused flags in every spelling, also after flags that take no next word.
REFUSED_FLAGS = [
    ("kubectl --kubeconfig=/root/.kube/config get pods", "--kubeconfig"),
    ("kubectl get pods --kubeconfig /root/.kube/config", "--kubeconfig"),
    ("kubectl get pods --kube_config=x", "--kube-config"),
    ("kubectl apply --validate --kubeconfig=/x -f -", "--kubeconfig"),
    ("kubectl apply --dry-run --server http://127.0.0.1:6443 -f -", "--server"),
    ("kubectl delete --cascade --token abc netpol adservice", "--token"),
    ("kubectl get --show-managed-fields --kubeconfig x netpol", "--kubeconfig"),
    ("kubectl get -Aw pods", "--watch"),
    ("kubectl get -As http://127.0.0.1:1 pods", "--server"),
    ("kubectl get pods -shttp://127.0.0.1:1", "--server"),
    ("kubectl get pods -s=http://127.0.0.1:1", "--server"),
    ("kubectl --server=http://127.0.0.1:1 get pods", "--server"),
    ("kubectl get pods --token=t", "--token"),
    ("kubectl get pods --as=system:admin", "impersonation"),
    ("kubectl get pods --as-group=system:masters", "impersonation"),
    ("kubectl get pods --as-uid=0", "impersonation"),
    ("kubectl get pods --user=admin", "--user"),
    ("kubectl get pods --context=other", "--context"),
    ("kubectl get pods --cluster=other", "--cluster"),
    ("kubectl get pods --cache-dir=/root/.kube", "--cache-dir"),
    ("kubectl get pods --kuberc=/tmp/kuberc", "--kuberc"),
    ("kubectl get pods --proxy-url=http://127.0.0.1:8080", "--proxy-url"),
    ("kubectl get pods --profile=cpu --profile-output=/tmp/ngk-hostile-victim", "profiling"),
    ("kubectl get pods --profile-output=/etc/passwd", "profiling"),
    ("kubectl get pods -v=9", "log verbosity"),
    ("kubectl get pods --v 9", "log verbosity"),
    ("kubectl get pods --vmodule=*=9", "log verbosity"),
    ("kubectl get pods --insecure-skip-tls-verify", "TLS"),
    ("kubectl get pods --certificate-authority=/etc/ssl/x", "TLS"),
    ("kubectl get pods -w", "watching"),
    ("kubectl get pods --watch-only", "watching"),
    ("kubectl get --raw /api/v1/namespaces", "raw"),
    ("kubectl create --raw /api/v1/namespaces -f -", "raw"),
    ("kubectl apply -k /root", "kustomize"),
    ("kubectl apply --kustomize=/etc", "kustomize"),
    ("kubectl apply -R -f -", "recursive"),
    ("kubectl apply --prune -l app=x -f -", "pruning"),
    ("kubectl apply --force -f -", "forced"),
    ("kubectl delete netpol adservice --grace-period=0", "deletion timing"),
    ("kubectl delete netpol adservice --now", "deletion timing"),
    ("kubectl delete -i netpol adservice", "terminal"),
    ("kubectl get pods --log-flush-frequency=1s", "logging"),
    # pflag takes no abbreviations or other cases: each is an unknown flag, refused as such.
    ("kubectl get pods --kubec=/root/.kube/config", "--kubec is not available"),
    ("kubectl get pods --kubeconf /root/.kube/config", "--kubeconf is not available"),
    ("kubectl get pods --serv=http://127.0.0.1:1", "--serv is not available"),
    ("kubectl get pods --tok=x", "--tok is not available"),
    ("kubectl get pods --prof=cpu", "--prof is not available"),
    ("kubectl apply --kust=/etc", "--kust is not available"),
    ("kubectl get pods --KUBECONFIG=/x", "--KUBECONFIG is not available"),
    ("kubectl get pods --Server=http://127.0.0.1:1", "--Server is not available"),
    ("kubectl create configmap x --from-f=/etc/passwd", "--from-f is not available"),
    ("kubectl get pods --filen=/etc/passwd", "--filen is not available"),
    ("kubectl get pods --as_group=system:masters", "impersonation"),
    ("kubectl get pods --proxy_url=http://127.0.0.1:1", "--proxy-url"),
    ("kubectl get pods --profile_output=/tmp/ngk-hostile-victim", "profiling"),
    # Reordered: before the verb, between arguments, after -f -, after --.
    ("kubectl --token=x get pods", "--token"),
    ("kubectl -s http://127.0.0.1:1 get pods", "--server"),
    ("kubectl --kuberc /tmp/x get pods", "--kuberc"),
    ("kubectl get --kubeconfig=/x pods frontend", "--kubeconfig"),
    ("kubectl apply -f - --kubeconfig=/x", "--kubeconfig"),
    ("kubectl -n default --as=admin get pods", "impersonation"),
    ("kubectl apply --validate=false --dry-run=server --cascade -f -", "--cascade"),
    # Shorthands joined with '=' or clustered behind a flag that takes no value.
    ("kubectl apply -k=/etc", "kustomize"),
    ("kubectl get pods -w=true", "watching"),
    ("kubectl get pods -Aw=true", "watching"),
    ("kubectl apply -Rf -", "recursive"),
    ("kubectl get -Aks pods", "kustomize"),
    ("kubectl get pods -Lx -w", "watching"),
    ("kubectl delete -Ai netpol adservice", "terminal"),
    ("kubectl get pods -ns=x -s http://127.0.0.1:1", "--server"),
    ("kubectl get pods -v9", "log verbosity"),
    ("kubectl get pods -h", "-h is not available"),
    ("kubectl get --help", "--help is not available"),
    # Credentials, TLS and pruning flags: =-joined, as two words, `_` for `-`, abbreviated
    # (pflag knows no abbreviation: an unknown flag), before the verb, behind other flags.
    ("kubectl get pods --password=x", "--password is not allowed"),
    ("kubectl get pods --password x", "--password is not allowed"),
    ("kubectl --password=x get pods", "--password is not allowed"),
    ("kubectl get -A --password x pods", "--password is not allowed"),
    ("kubectl get pods --pass=x", "--pass is not available"),
    ("kubectl get pods --username=admin", "--username is not allowed"),
    ("kubectl get pods --username admin", "--username is not allowed"),
    ("kubectl --username=admin -n default get pods", "--username is not allowed"),
    ("kubectl get pods --user_name=admin", "--user-name is not available"),
    ("kubectl get pods --usern=admin", "--usern is not available"),
    ("kubectl get pods --tls-server-name=evil", "--tls-server-name is not allowed"),
    ("kubectl get pods --tls-server-name evil", "--tls-server-name is not allowed"),
    ("kubectl get pods --tls_server_name=evil", "--tls-server-name is not allowed"),
    ("kubectl --tls-server-name=evil get pods", "--tls-server-name is not allowed"),
    ("kubectl get pods --tls-server=evil", "--tls-server is not available"),
    ("kubectl apply --prune-allowlist=core/v1/ConfigMap -f -", "--prune-allowlist is not"),
    ("kubectl apply --prune-allowlist core/v1/ConfigMap -f -", "--prune-allowlist is not"),
    ("kubectl apply -f - --prune_allowlist=core/v1/ConfigMap", "--prune-allowlist is not"),
    ("kubectl apply --validate --prune-allowlist=x -f -", "--prune-allowlist is not"),
    ("kubectl apply --prune-allow=x -f -", "--prune-allow is not available"),
]
# (command, needle): files, URLs, folders and templates that would read outside the reply.
REFUSED_READS = [
    ("kubectl apply -f /etc/shadow", "may read only"),
    ("kubectl apply -f=/etc/passwd", "may read only"),
    ("kubectl apply -f/etc/passwd", "may read only"),
    ("kubectl apply --filename=/root/.ssh/id_rsa", "may read only"),
    ("kubectl apply -f http://127.0.0.1:8080/evil.yaml", "may read only"),
    ("kubectl apply -f https://example.com/x.yaml", "may read only"),
    ("kubectl apply -f ../../etc/passwd", "may read only"),
    ("kubectl apply -f /proc/self/environ", "may read only"),
    ("kubectl patch netpol adservice --patch-file=/etc/shadow", "may read only"),
    ("kubectl get pods -o jsonpath-file=/etc/passwd", "reads a file"),
    ("kubectl get pods -ojsonpath-file=/etc/passwd", "reads a file"),
    ("kubectl get pods --output=go-template-file=/etc/passwd", "reads a file"),
    ("kubectl get pods -o custom-columns-file=/etc/passwd", "reads a file"),
    ("kubectl get pods -o templatefile --template=/etc/passwd", "reads a file"),
    ("kubectl create configmap x --from-file=/etc/passwd", "--from-file"),
    ("kubectl create secret generic x --from-file=/root/.ssh/id_rsa", "--from-file"),
    ("kubectl create secret generic x --from-env-file=/proc/self/environ", "--from-env-file"),
    ("kubectl create deployment x --image=busybox", "--image is not available"),
    ("kubectl create evilplugin", "subcommands or plugins"),
    ("kubectl apply edit-last-applied netpol adservice", "takes no arguments"),
    ("kubectl apply -f /dev/stdin", "may read only"),
    ("kubectl apply -f /ngk/kubeconfig", "may read only"),
    ("kubectl apply -f ~/.kube/config", "may read only"),
    ("kubectl apply -f kc", "may read only"),
    ("kubectl create -f - secret generic x", "subcommands or plugins"),
    ("kubectl create --dry-run configmap x", "subcommands or plugins"),
    ("kubectl create -o yaml evilplugin", "subcommands or plugins"),
    ("kubectl get pods -o go-template-file=/etc/passwd", "reads a file"),
    ("kubectl get pods -o JSONPATH-FILE=/etc/passwd", "not an output format"),
    # URLs of the loopback server and of the other cluster (filled in at run time).
    ("kubectl apply -f http://127.0.0.1:{PORT}/ns.yaml", "may read only"),
    ("kubectl apply --validate -f http://127.0.0.1:{PORT}/ns.yaml", "may read only"),
    ("kubectl get pods --server={OTHER}", "--server"),
    ("kubectl get pods -s{OTHER}", "--server"),
    ("kubectl apply --dry-run -f {OTHER}/api/v1/namespaces/default", "may read only"),
]
SHELL = [
    ("kubectl get pods; touch /tmp/ngk-hostile-mark", "shell operators"),
    ("kubectl get pods | sh", "shell operators"),
    ("kubectl get pods && touch /tmp/ngk-hostile-mark", "shell operators"),
    ("kubectl get pods > /tmp/ngk-hostile-mark", "shell operators"),
    ("kubectl get pods < /etc/passwd", "shell operators"),
    ("kubectl get pods $(touch /tmp/ngk-hostile-mark)", "command substitution"),
    ("kubectl get pods `id`", "command substitution"),
    ("touch /tmp/ngk-hostile-mark", "only kubectl"),
    ("KUBECONFIG=/tmp/x kubectl get pods", "only kubectl"),
    ("env KUBECONFIG=/tmp/x kubectl get pods", "only kubectl"),
    ("setsid kubectl proxy", "only kubectl"),
    ("sh -c 'kubectl get pods'", "only kubectl"),
    ("kubectl get pods\nkubectl delete netpol --all", "one kubectl command per turn"),
    ("kubectl get pods & touch /tmp/ngk-hostile-mark", "shell operators"),
    ("kubectl get pods || touch /tmp/ngk-hostile-mark", "shell operators"),
    ("kubectl get pods 2>/tmp/ngk-hostile-mark", "shell operators"),
    ("kubectl get pods $(id)x", "command substitution"),
    ("cat /etc/passwd | kubectl apply -f -", "shell operators"),
    ("./kubectl --kubeconfig=/x get pods", "--kubeconfig"),
    ("kubectl apply -f - <<EOF\nkind: X\nEOF\ntouch /tmp/ngk-hostile-mark", "one kubectl"),
    ("kubectl apply -f - <<EOF\nkind: X\n", "not closed"),
]


def _apply(spec_extra: dict, command: str = "kubectl apply -f -") -> str:
    return say(command, _policy(spec_extra))


def _patch(kind: str, patch: object) -> str:
    return say(f"kubectl patch networkpolicy adservice --type={kind} -p '{json.dumps(patch)}'")


# 5 kB of YAML that would compile to half a million packet-filter rules.
EXPLOSION = yaml.safe_dump(
    {
        **POLICY,
        "metadata": {"name": "explosion"},
        "spec": {
            "podSelector": {},
            "ingress": [
                {
                    "from": [{"ipBlock": {"cidr": f"10.{i}.0.0/16"}} for i in range(200)],
                    "ports": [{"port": p} for p in range(1, 201)],
                }
            ],
        },
    }
)
POD_NAME = next(
    o["metadata"]["name"]
    for o in boutique.cluster_objects()
    if o["kind"] == "Pod" and o["metadata"].get("namespace") == "default"
)
BAD_POD = yaml.safe_dump(
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD_NAME},
     "spec": {"containers": ["x"]}}
)  # fmt: skip
SMUGGLED = "fe80::%x\n-A NGK-INGRESS -j ACCEPT\nCOMMIT\n#/64"
STAMPED = yaml.safe_dump(
    {**POLICY, "metadata": {"name": "stamped", "creationTimestamp": "2024-01-01T00:00:00+02:00"}}
)
# Writes the data plane must either enforce or see refused; the cluster takes the next one.
WRITES = [
    ("ingress [null]", _apply({"ingress": [None]}), OK, "configured"),
    ("egress [null]", _apply({"egress": [None], "policyTypes": ["Egress"]}), OK, "configured"),
    ("ports [null]", _apply({"ingress": [{"ports": [None]}]}), OK, "configured"),
    ("from [null]", _apply({"ingress": [{"from": [None]}]}), E, "must specify a peer"),
    ("to [null]", _apply({"egress": [{"to": [None]}]}), E, "must specify a peer"),
    ("ipBlock null", _apply({"ingress": [{"from": [{"ipBlock": None}]}]}), E, "must specify"),
    (
        "except [null]",
        _apply({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": [None]}}]}]}),
        E,
        "except",
    ),
    (
        "matchExpressions [null]",
        _apply({"podSelector": {"matchExpressions": [None]}}),
        E,
        "matchExpressions",
    ),
    ("policyTypes [null]", _apply({"policyTypes": [None]}), E, "policyTypes"),
    ("podSelector null", _apply({"podSelector": None}), OK, ""),
    ("labels null", _apply({"podSelector": {"matchLabels": {"a": None}}}), OK, ""),
    ("port object", _apply({"ingress": [{"ports": [{"port": {}}]}]}), E, "IntOrString"),
    ("ports string", _apply({"ingress": [{"ports": "x"}]}), E, "cannot unmarshal"),
    ("ingress number", _apply({"ingress": 7}), E, "cannot unmarshal"),
    ("port 1e30", _apply({"ingress": [{"ports": [{"port": 1e30}]}]}), E, ""),
    ("port -1", _apply({"ingress": [{"ports": [{"port": -1}]}]}), E, "between 1 and 65535"),
    ("protocol ICMP", _apply({"ingress": [{"ports": [{"protocol": "ICMP"}]}]}), E, "protocol"),
    (
        "endPort below port",
        _apply({"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]}),
        E,
        "endPort",
    ),
    (
        "bad cidr",
        _apply({"ingress": [{"from": [{"ipBlock": {"cidr": "1.2.3.4/99"}}]}]}),
        E,
        "CIDR",
    ),
    (
        "many rules",
        _apply({"ingress": [{"ports": [{"port": p}]} for p in range(1, 3000)]}),
        OK,
        "configured",
    ),
    (
        "server-side nulls",
        _apply({"ingress": [None, {"ports": [None]}]}, "kubectl apply --server-side -f -"),
        OK,
        "serverside-applied",
    ),
    ("create nulls", _apply({"ingress": [None]}, "kubectl create -f -"), E, "already exists"),
    ("replace nulls", _apply({"ingress": [{"ports": [None]}]}, "kubectl replace -f -"), OK, ""),
    (
        "json patch null",
        _patch("json", [{"op": "add", "path": "/spec/ingress", "value": [None]}]),
        OK,
        "patched",
    ),
    ("merge patch null", _patch("merge", {"spec": {"ingress": [None]}}), OK, "patched"),
    ("strategic null", _patch("strategic", {"spec": {"egress": [None]}}), OK, "patched"),
    ("patch metadata list", _patch("merge", {"metadata": [1]}), E, "cannot unmarshal"),
    ("patch to a list", _patch("json", [{"op": "replace", "path": "", "value": []}]), E, ""),
    ("patch renames", _patch("merge", {"metadata": {"name": "x"}}), E, "name"),
    (
        "patch deep",
        say(
            "kubectl patch netpol adservice --type=merge -p '"
            + '{"a":' * 2000
            + "1"
            + "}" * 2000
            + "'"
        ),
        E,
        "nested deeper",
    ),
    ("yaml deep", say("kubectl apply -f -", "a: " + "[" * 20000), E, "error"),
    ("delete all policies", say("kubectl delete networkpolicies --all"), OK, "deleted"),
    ("rule explosion", say("kubectl create -f -", EXPLOSION), E, "packet-filter rules"),
    # Issue 11's red team: patches that do not apply are the agent's error (422), and what
    # the data plane cannot enforce never reaches it.
    ("json path number", _patch("json", [{"op": "add", "path": 5, "value": 1}]), E, "decode"),
    (
        "json from number",
        _patch("json", [{"op": "copy", "from": 5, "path": "/metadata/labels"}]),
        E,
        "failed to decode from",
    ),
    (
        "json index ²",
        _patch("json", [{"op": "test", "path": "/spec/policyTypes/²", "value": 1}]),
        E,
        "proper array index",
    ),
    (
        "json index past int",
        _patch("json", [{"op": "add", "path": "/spec/policyTypes/" + "9" * 5000, "value": 1}]),
        E,
        "proper array index",
    ),
    (
        "json copy bomb",
        _patch("json", [{"op": "copy", "from": "/spec", "path": f"/spec/x{i}"} for i in range(20)]),
        E,
        "accumulated size",
    ),
    (
        "json nesting by copies",
        _patch(
            "json",
            [{"op": "copy", "from": "/spec/podSelector", "path": "/spec/podSelector/a"}] * 80,
        ),
        E,
        "nested deeper",
    ),
    (
        "strategic primitive list number",
        _patch("strategic", {"spec": {"$deleteFromPrimitiveList/policyTypes": 5}}),
        E,
        "primitive list",
    ),
    (
        "strategic retainKeys number",
        _patch("strategic", {"spec": {"$retainKeys": 5, "podSelector": {}}}),
        E,
        "retainKeys",
    ),
    ("strategic $patch 5", _patch("strategic", {"spec": {"$patch": 5}}), E, "patch type"),
    (
        "strategic pod replace beside 1",
        say(
            f"kubectl patch pod {POD_NAME} --type=strategic -p "
            """'{"spec":{"containers":[{"$patch":"replace"},1]}}'"""
        ),
        E,
        "merge key",
    ),
    (
        "server-side apply containers [x]",
        say("kubectl apply --server-side --force-conflicts -f -", BAD_POD),
        E,
        "merge key",
    ),
    (
        "ipv6 block",
        _apply({"ingress": [{"from": [{"ipBlock": {"cidr": "2001:db8::/32"}}]}]}),
        OK,
        "configured",
    ),
    ("ipv6 any", _apply({"ingress": [{"from": [{"ipBlock": {"cidr": "::/0"}}]}]}), OK, ""),
    (
        "cidr smuggling rules",
        _apply({"ingress": [{"from": [{"ipBlock": {"cidr": SMUGGLED}}]}]}),
        E,
        "valid CIDR",
    ),
    (
        "cidr with a netmask",
        _apply({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/255.0.0.0"}}]}]}),
        E,
        "valid CIDR",
    ),
    (
        "except smuggling rules",
        _apply({"ingress": [{"from": [{"ipBlock": {"cidr": "::/0", "except": [SMUGGLED]}}]}]}),
        E,
        "valid CIDR",
    ),
    ("creationTimestamp offset", say("kubectl create -f -", STAMPED), OK, "created"),
    (
        "uid changed",
        _patch("merge", {"metadata": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        E,
        "immutable",
    ),
    (
        "deletionTimestamp set",
        _patch("merge", {"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}}),
        E,
        "immutable",
    ),
]
SIZES = [
    ("huge reply", "kubectl get pods " + "x" * (reply.MAX_REPLY_CHARS + 1), P, "at most"),
    ("long command", say("kubectl get pods -l " + "a" * 20000), B, "limit"),
    ("arg over 128 KiB", say("kubectl get pods -l " + "a" * 140000), B, "limit"),
    ("stdin over limit", say("kubectl apply -f -", "#" * 300000), B, "stdin"),
    ("file over limit", say("kubectl apply -f big", big="#" * 300000), B, "over"),
    ("NUL in command", say("kubectl get pods\x00--kubeconfig=x"), B, "NUL"),
    ("escape surrogate", say("kubectl get pods -l a=\udcff"), B, "surrogate"),
    ("high surrogate", say("kubectl get pods -l a=\ud800"), B, "surrogate"),
    ("surrogate stdin", say("kubectl apply -f -", "a: \ud800"), B, "surrogate"),
    ("nested json bomb", '{"command": ' + "[" * 100000, P, "no kubectl command"),
    ("braces bomb", "{" * 500000, P, "no kubectl command"),
    ("fence openers", "```x" * 150000, P, "no kubectl command"),
    ("label at the limit", say("kubectl get pods -l " + "a" * 16000), OK, "No resources"),
    # Output bombs stop at the cap or the memory limit; the runner holds only the cap.
    (
        "template bomb",
        say(
            "kubectl get pods -o go-template="
            "'{{range .items}}{{range $.items}}{{range $.items}}{{range $.items}}"
            "{{$.items}}{{end}}{{end}}{{end}}{{end}}'"
        ),
        R,
        "output cut",
    ),
    ("jsonpath bomb", say("kubectl get pods -o jsonpath='{..}{..}{..}{..}'"), R, "output cut"),
    (
        "printf bomb",
        say("kubectl get ns default -o go-template='{{printf \"%0999999d\" 1}}'"),
        R,
        "output cut",
    ),
]
CONFIG = [
    # Config files and plugins arriving as sent files, here-documents and stdin.
    ("kubeconfig sent", say("kubectl --kubeconfig=kc get pods", kc=KUBECONFIG), B, "--kubeconfig"),
    ("kuberc sent", say("kubectl --kuberc=rc get pods", rc=KUBERC), B, "--kuberc"),
    (
        "kubeconfig heredoc",
        say(f"kubectl apply -f - <<EOF\n{KUBECONFIG}EOF"),
        E,
        'no matches for kind "Config"',
    ),
    (
        "kubeconfig to /dev/stdin",
        say("kubectl --kubeconfig=/dev/stdin get pods", KUBECONFIG),
        B,
        "--kubeconfig",
    ),
    ("kubeconfig stdin", say("kubectl apply -f -", KUBECONFIG), E, "no matches for kind"),
    ("kuberc stdin", say("kubectl create -f -", KUBERC), E, "no matches for kind"),
    ("kubeconfig as -f file", say("kubectl apply -f kc", kc=KUBECONFIG), E, "no matches for kind"),
    (
        "files named like config",
        say("kubectl get pods", kubeconfig=KUBECONFIG, kuberc=KUBERC, config=KUBECONFIG),
        OK,
        "frontend",
    ),
    ("file named ../x", say("kubectl apply -f x", **{"../x": "a"}), B, "not allowed"),
    ("file named /etc/x", say("kubectl apply -f x", **{"/etc/x": "a"}), B, "not allowed"),
    ("file named .kube", say("kubectl get pods", **{".kube": "a"}), B, "not allowed"),
    ("nine files", say("kubectl get pods", **{f"f{i}": "a" for i in range(9)}), B, "at most 8"),
    ("edit with stdin", say("kubectl edit netpol adservice", _policy({})), E, "A copy of your"),
    ("edit without stdin", say("kubectl edit netpol adservice"), E, "Edit cancelled"),
    ("create --edit", say("kubectl create --edit -f -", _policy({})), E, "already exists"),
    ("diff", say("kubectl diff -f -", _policy({})), OK, "networking.k8s.io"),  # exit 1: a diff
    ("run as /tmp/kubectl", say("/tmp/kubectl get pods"), OK, "frontend"),
    # Workloads stay: deleting pods is refused by the check and by the server.
    ("delete po", say("kubectl delete po frontend"), B, "deleting pods"),
    ("delete pods --all", say("kubectl delete pods --all"), B, "deleting pods"),
    ("delete all", say("kubectl delete all --all"), B, "deleting pods"),
    (
        "delete pod by file",
        say("kubectl delete -f -", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"),
        E,
        "forbidden",
    ),
    ("unparseable", "rm -rf / please", P, "no kubectl command"),
    ("binary", "\x00\x01\x02\xff\xfe", P, "no kubectl command"),
]


def _replies() -> list[tuple[str, str, StepStatus, str]]:
    """(id, reply, expected status, a needle in the step's output)."""
    out = [(f"verb {v.split()[0]}", say(f"kubectl {v}"), B, "not available") for v in REFUSED_VERBS]
    out += [(f"verb -n {v.split()[0]}", say(f"kubectl -n default {v}"), B, "not available")
            for v in REFUSED_VERBS[:6]]  # fmt: skip
    # Every refused verb also abbreviated (cobra takes no prefixes: a plugin name, refused)
    # and behind an =-joined flag; the first ones also behind a clustered shorthand with
    # its value attached and behind a reordered global flag.
    for v in REFUSED_VERBS:
        verb, rest = v.split()[0], v[len(v.split()[0]) :]
        short = verb[: max(1, len(verb) - 2)]
        out.append((f"verb abbreviated {verb}", say(f"kubectl {short}{rest}"), B, "not available"))
        out.append((f"verb --namespace= {verb}", say(f"kubectl --namespace=default {v}"), B,
                    "not available"))  # fmt: skip
    for v in REFUSED_VERBS[:10]:
        verb = v.split()[0]
        out.append((f"verb -ndefault {verb}", say(f"kubectl -ndefault {v}"), B, "not available"))
        out.append((f"verb reordered {verb}", say(f"kubectl --request-timeout=5s {v}"), B,
                    "not available"))  # fmt: skip
    out += [(c, say(c), B, n) for c, n in REFUSED_FLAGS + REFUSED_READS + SHELL]
    return out + WRITES + SIZES + CONFIG


HOSTILE = _replies()


@pytest.fixture(scope="module")
def world():
    with hostile_world() as found:
        yield found
    assert not MARK.exists()


def _check_write(n: int) -> str:
    """A write that always changes an object, so the data plane recompiles every policy."""
    body = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "ngk-check", "annotations": {"n": str(n)}},
        "spec": {"podSelector": {"matchLabels": {"app": "nothing"}}},
    }
    return say("kubectl apply -f -", yaml.safe_dump(body))


def test_hostile_suite_is_large_enough():
    assert len(HOSTILE) >= 120
    assert len({r for _, r, _, _ in HOSTILE}) == len(HOSTILE)
    assert len({c for c, _, _, _ in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize(("case", "text", "status", "needle"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_reply_is_a_typed_step(world, case, text, status, needle):
    cluster = world.env.cluster
    text = text.replace("{PORT}", str(world.port)).replace("{OTHER}", world.other.url)
    with world.env.episode(world.query()) as episode:
        revision = cluster.store.revision
        step = episode.step(text)
        assert step.status is status, (case, step.output[-400:])
        assert needle in step.output, (case, step.output[-400:])
        assert step.error or status is OK, case  # every step but a clean one says why
        if status in (B, P):
            assert cluster.store.revision == revision
            assert step.evidence["mismatches_after"] == world.query().ground_truth["mismatches"]
        # Whatever came before, the cluster still takes a write and enforces it.
        after = episode.step(_check_write(cluster.store.revision))
        assert after.status is OK, (case, after.output[-400:])
    assert cluster.client.cgroup is None or cluster.client.cgroup.pids() == []
    assert cluster._server.internal_errors == []


def test_runner_memory_stays_bounded_under_an_output_bomb(world):
    bomb = (
        "kubectl get pods -o go-template='{{range .items}}{{range $.items}}{{range $.items}}"
        "{{range $.items}}{{range $.items}}{{$.items}}{{end}}{{end}}{{end}}{{end}}{{end}}'"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with world.env.episode(world.query()) as episode:
        step = episode.step(say(bomb))
    assert step.status is R
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown_kb < 64 * 1024, f"the runner grew by {grown_kb} KB"
