"""The agent's kubectl: the real binary, one command at a time, without a shell.

A command is parsed like a shell line (quotes, a here-document `<<EOF` or `cat <<EOF |`
as its standard input) but never run by one: pipes, redirections, `;`, `&&` and command
substitution are refused, as are verbs that do not fit the task (exec, logs, proxy,
port-forward, run, debug, cp, ...), deleting pods, flags that point kubectl elsewhere
(`--kubeconfig`, `--server`, `--token`, ...) and reading files other than the ones sent
with the command. It runs with the cluster's own kubeconfig and cache, in a scratch
folder, with a timeout and a cap on the output kept.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ALLOWED_VERBS = (
    "get", "describe", "explain", "api-resources", "api-versions", "version", "events",
    "apply", "create", "replace", "patch", "edit", "label", "annotate", "delete", "diff",
)  # fmt: skip
VALUE_FLAGS = {
    "-n", "--namespace", "-o", "--output", "-l", "--selector", "-f", "--filename", "-p",
    "--patch", "--type", "--field-selector", "-s", "--server", "--kubeconfig", "--context",
    "--cluster", "--user", "--token", "--as", "--as-group", "--as-uid", "--cache-dir", "-k",
    "--kustomize", "--template", "--sort-by", "-L", "--label-columns", "--field-manager",
    "--patch-file", "-c", "--container", "--timeout", "--request-timeout", "-v", "--v",
    "--validate", "--dry-run", "--grace-period", "--cascade", "--show-managed-fields",
}  # fmt: skip
FORBIDDEN_FLAGS = {
    "-s": "the API server is fixed", "--server": "the API server is fixed",
    "--kubeconfig": "the kubeconfig is fixed", "--context": "the context is fixed",
    "--cluster": "the cluster is fixed", "--user": "the user is fixed",
    "--token": "credentials are fixed", "--username": "credentials are fixed",
    "--password": "credentials are fixed", "--as": "impersonation is not allowed",
    "--as-group": "impersonation is not allowed", "--as-uid": "impersonation is not allowed",
    "--cache-dir": "the cache folder is fixed", "--certificate-authority": "TLS is fixed",
    "--client-certificate": "TLS is fixed", "--client-key": "TLS is fixed",
    "--insecure-skip-tls-verify": "TLS is fixed", "--tls-server-name": "TLS is fixed",
    "-w": "watching never ends; run get again instead",
    "--watch": "watching never ends; run get again instead",
    "--watch-only": "watching never ends; run get again instead",
    "--raw": "raw API paths are not available", "-k": "kustomize folders are not available",
    "--kustomize": "kustomize folders are not available", "--profile": "profiling is off",
    "--profile-output": "profiling is off", "--log-file": "log files are off",
    "--log-dir": "log files are off", "-R": "recursive file reads are not available",
    "--recursive": "recursive file reads are not available",
}  # fmt: skip
POD_TYPES = {"po", "pod", "pods", "all"}
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
EDITOR = Path(__file__).with_name("editor.py")


class Refused(Exception):
    """A command that is not run; the message is shown to the agent."""


@dataclass
class Command:
    argv: list[str]  # the arguments after `kubectl`
    stdin: str = ""
    files: dict[str, str] = field(default_factory=dict)  # name -> text, readable with -f

    @property
    def text(self) -> str:
        return shlex.join(["kubectl", *self.argv])


@dataclass
class Result:
    exit_code: int
    output: str
    status: str  # ok | exec_error | timeout | resource_limit
    seconds: float


def parse(line: str, stdin: str = "", files: dict[str, str] | None = None) -> Command:
    """A Command from one command line (with an optional here-document); raises Refused."""
    text = line.strip().replace("\\\n", " ")
    first, _, rest = text.partition("\n")
    m = _HEREDOC.search(first)
    if m:
        body, end, after = [], m.group(3), []
        lines = rest.split("\n")
        for i, body_line in enumerate(lines):
            if (body_line.lstrip("\t") if m.group(1) else body_line).rstrip() == end:
                after = [x for x in lines[i + 1 :] if x.strip()]
                break
            body.append(body_line)
        else:
            raise Refused(f"the here-document is not closed by a line `{end}`")
        if after:
            raise Refused("one kubectl command per turn; send the next one on the next turn")
        stdin = "\n".join(body) + "\n"
        first = (first[: m.start()] + first[m.end() :]).strip()
        cat = re.match(r"^cat\s*\|\s*(.*)$", first)
        if cat:
            first = cat.group(1)
    elif rest.strip():
        raise Refused("one kubectl command per turn; send the next one on the next turn")
    if "`" in first or "$(" in first:
        raise Refused("command substitution is not available: there is no shell")
    try:
        lexer = shlex.shlex(first, posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError as err:
        raise Refused(f"the command line does not parse: {err}") from None
    ops = [t for t in tokens if t and all(c in ";&|<>()" for c in t)]
    if ops:
        raise Refused(
            f"shell operators are not available (found {ops[0]!r}): run one kubectl command, "
            "without pipes, redirections or command lists"
        )
    if tokens and tokens[0] in ("$", "#"):
        tokens = tokens[1:]
    if not tokens or Path(tokens[0]).name != "kubectl":
        shown = tokens[0] if tokens else ""
        raise Refused(f"only kubectl commands run here, not {shown!r}")
    return Command(tokens[1:], stdin, dict(files or {}))


def _flag(token: str) -> tuple[str, str | None]:
    if token.startswith("--") and "=" in token:
        name, _, value = token.partition("=")
        return name, value
    if token.startswith("-") and not token.startswith("--") and len(token) > 2:
        return token[:2], token[2:].lstrip("=")
    return token, None


def check(cmd: Command) -> str:
    """The verb of an acceptable command; raises Refused with the reason otherwise."""
    positional: list[str] = []
    args = cmd.argv
    i = 0
    while i < len(args):
        name, value = _flag(args[i])
        if name.startswith("-") and name != "-":
            if value is None and name in VALUE_FLAGS:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            _check_flag(name, value or "", cmd)
        else:
            positional.append(args[i])
        i += 1
    if not positional:
        raise Refused("no kubectl verb given; e.g. `kubectl get networkpolicies`")
    verb = positional[0]
    if verb not in ALLOWED_VERBS:
        raise Refused(
            f"`kubectl {verb}` is not available in this task; use one of: "
            + ", ".join(ALLOWED_VERBS)
        )
    if verb == "delete" and len(positional) > 1:
        kinds = {k.split("/")[0].split(".")[0] for k in positional[1].split(",")}
        if kinds & POD_TYPES:
            raise Refused("deleting pods is not allowed: fix the policies, not the workloads")
    return verb


def _check_flag(name: str, value: str, cmd: Command) -> None:
    if name in FORBIDDEN_FLAGS:
        raise Refused(f"{name} is not allowed: {FORBIDDEN_FLAGS[name]}")
    if name in ("-o", "--output") and "-file" in value.split("=")[0]:
        raise Refused(f"-o {value.split('=')[0]} reads a file; give the template inline")
    if name in ("-f", "--filename", "--patch-file"):
        path = value[2:] if value.startswith("./") else value
        if value == "-" and name != "--patch-file":
            return
        if path not in cmd.files:
            raise Refused(
                f"{name} {value}: kubectl may read only '-' (the text sent with the command) "
                "or files sent with the command"
            )


class Kubectl:
    """The kubectl binary bound to one API server, its kubeconfig and cache."""

    def __init__(
        self,
        binary: str,
        server: str,
        home: Path,
        *,
        timeout_s: float = 10.0,
        output_bytes: int = 16384,
    ) -> None:
        self.binary = binary
        self.home = home
        self.timeout_s = timeout_s
        self.output_bytes = output_bytes
        self.kubeconfig = home / "kubeconfig"
        self.kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: netgauge\n  cluster:\n"
            f"    server: {server}\ncontexts:\n- name: netgauge\n  context:\n"
            "    cluster: netgauge\n    user: netgauge-agent\n    namespace: default\n"
            "current-context: netgauge\nusers:\n- name: netgauge-agent\n  user:\n"
            "    token: netgauge-emulated-cluster\n"
        )
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(home / "cache"),
            "KUBE_EDITOR": f"{sys.executable} {EDITOR}",
            "KUBECTL_INTERACTIVE_DELETE": "false",
            "LANG": "C.UTF-8",
        }

    def run(self, cmd: Command) -> Result:
        """Run an already-checked command in a fresh scratch folder."""
        work = self.home / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        for name, text in cmd.files.items():
            if not _FILE_NAME.match(name):
                return Result(1, f"error: file name {name!r} is not allowed", "exec_error", 0.0)
            (work / name).write_text(text)
        env = dict(self.env)
        if cmd.stdin:
            (self.home / "edit-source").write_text(cmd.stdin)
            env["NGK_EDIT_SOURCE"] = str(self.home / "edit-source")
        started = time.perf_counter()
        proc = subprocess.Popen(
            [self.binary, *cmd.argv],
            cwd=work,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(cmd.stdin.encode(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            seconds = time.perf_counter() - started
            text = self._cap(out)[0] + f"\n[kubectl was stopped after {self.timeout_s:g} s]"
            return Result(-9, text.strip(), "timeout", seconds)
        seconds = time.perf_counter() - started
        text, cut = self._cap(out)
        if cut:
            return Result(proc.returncode, text, "resource_limit", seconds)
        return Result(
            proc.returncode, text, "ok" if proc.returncode == 0 else "exec_error", seconds
        )

    def _cap(self, out: bytes) -> tuple[str, bool]:
        if len(out) <= self.output_bytes:
            return out.decode(errors="replace").rstrip(), False
        kept = out[: self.output_bytes].decode(errors="replace")
        return (
            kept
            + f"\n[output cut: {len(out)} bytes, only the first {self.output_bytes} are shown]",
            True,
        )
