"""The agent's kubectl: the real binary, one command at a time, in a jail, without a shell.

A command is parsed like a shell line (quotes, a here-document `<<EOF` or `cat <<EOF |`
as its standard input) but never run by one: pipes, redirections, `;`, `&&` and command
substitution are refused. What the agent sends is bounded in size before any parsing.

What kubectl can touch is decided by the operating system (`Kubectl.run`):
  - it runs in the cluster's own network namespace, holding only a loopback where the
    API server listens: no other server on this host, no other cluster, no network;
  - as uid 65534 in a user namespace of its own with no capabilities (emulators/jail.py),
    in a fresh root holding only the kubectl binary (alone on PATH: no plugins), `cp` as
    the editor of `kubectl edit`, `diff` for `kubectl diff`, the libraries these two load, a
    read-only kubeconfig with the cluster's token, the files sent with the command and an
    empty HOME and /tmp that vanish with it; KUBERC=off;
  - in a memory and pids cgroup, with a timeout and an output cap read as a stream; its
    pid namespace dies with it, so nothing it starts outlives the command.
The flags are checked by `flags.check` as a second line, reading them as kubectl does.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from emulators import process
from emulators.jail import Jail
from emulators.k8s import flags
from emulators.k8s.flags import Refused
from pipeline import cgroup
from pipeline.errors import EnvironmentFailure
from pipeline.files import replacing
from pipeline.untrusted import argv_refusal

__all__ = ["Command", "Kubectl", "Refused", "Result", "check", "parse"]

MAX_LINE_CHARS = 16 << 10  # the command line (each argument stays far below 128 KiB)
MAX_STDIN_CHARS = 256 << 10
MAX_FILES = 8
MAX_FILE_CHARS = 256 << 10
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
JAIL_UID = 65534
JAIL_MEMORY_BYTES = 512 << 20
JAIL_PIDS = 256  # tasks, threads included (the Go runtime starts a dozen)
TOOLS = {"cp": "/usr/bin/cp", "diff": "/usr/bin/diff"}  # the editor, kubectl diff's differ
STAGE_DIR = Path("/var/lib/netgauge/jail")  # binaries the jail's uid can reach (0755 path)


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
    server_errors: tuple[str, ...] = ()  # bugs of the API server the command's requests met


def _bound(line: str, stdin: str, files: dict[str, str]) -> None:
    """Refuse what is too large to parse or to hand to the kernel as arguments."""
    if len(line) > MAX_LINE_CHARS + MAX_STDIN_CHARS:
        raise Refused(
            f"the command is {len(line)} characters long; the limit is {MAX_LINE_CHARS} for "
            f"the command line and {MAX_STDIN_CHARS} for a here-document"
        )
    if len(stdin) > MAX_STDIN_CHARS:
        raise Refused(f"stdin is {len(stdin)} characters long; the limit is {MAX_STDIN_CHARS}")
    if len(files) > MAX_FILES:
        raise Refused(f"{len(files)} files were sent; at most {MAX_FILES} are accepted")
    for name, text in files.items():
        if not isinstance(name, str) or not _FILE_NAME.match(name):
            raise Refused(f"file name {str(name)[:60]!r} is not allowed (letters, digits, . _ -)")
        if not isinstance(text, str) or len(text) > MAX_FILE_CHARS:
            raise Refused(f"file {name} is over {MAX_FILE_CHARS} characters or not text")
    for what, text in (("the command", line), ("stdin", stdin), *files.items()):
        # NUL: fine in stdin and files (bytes kubectl reads); on the line `parse` says why not.
        unfit = argv_refusal(text.replace("\0", ""))
        if unfit:
            raise Refused(f"{what} cannot be handed to kubectl: {unfit}")


def parse(line: str, stdin: str = "", files: dict[str, str] | None = None) -> Command:
    """A Command from one command line (with an optional here-document); raises Refused."""
    files = dict(files or {})
    _bound(line, stdin, files)
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
    if len(first) > MAX_LINE_CHARS or len(stdin) > MAX_STDIN_CHARS:
        raise Refused(
            f"the command line is limited to {MAX_LINE_CHARS} characters and its "
            f"here-document to {MAX_STDIN_CHARS}"
        )
    if "\0" in first:
        raise Refused("the command line holds a NUL byte")
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
    return Command(tokens[1:], stdin, files)


def _found_a_diff(cmd: Command, code: int) -> bool:
    """`kubectl diff` exits 1 when it found a difference (0: none, above 1: an error): a
    diagnostic that worked."""
    if code != 1:
        return False
    try:
        return flags.check(cmd.argv, set(cmd.files)).verb == "diff"
    except Refused:
        return False


def check(cmd: Command) -> str:
    """The verb of an acceptable command; raises Refused with the reason otherwise."""
    return flags.check(cmd.argv, set(cmd.files)).verb


def staged(binary: str) -> str:
    """A copy of `binary` on a path every uid can reach (the project may sit under /root,
    which the jail's uid cannot enter), made once per version of the binary."""
    st = os.stat(binary)
    target = STAGE_DIR / f"{Path(binary).name}-{st.st_size}-{st.st_mtime_ns}"
    if not target.exists():
        STAGE_DIR.mkdir(parents=True, exist_ok=True)
        for folder in (STAGE_DIR, STAGE_DIR.parent):  # ours; the system's are 0755 already
            folder.chmod(0o755)
        with replacing(target) as partial:
            shutil.copyfile(binary, partial)
            partial.chmod(0o755)
    return str(target)


def shared_libraries(binaries: Iterable[str]) -> list[tuple[str, str]]:
    """(host file, jail path) of each shared library the binaries load, as ld.so resolves
    them here: only these are bound, not whole library folders (which hold helper programs
    too). Paths under /lib are bound under /usr/lib, where the jail's /lib points."""
    found: dict[str, str] = {}
    for binary in binaries:
        try:
            out = subprocess.run(
                ["ldd", binary], capture_output=True, text=True, timeout=30, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError) as err:
            raise EnvironmentFailure(f"cannot list the libraries of {binary}: {err}") from err
        for line in out.splitlines():
            path = line.split("=>")[-1].split("(")[0].strip()
            if path.startswith("/"):
                where = os.path.join(os.path.realpath(os.path.dirname(path)), Path(path).name)
                found[where] = os.path.realpath(path)
    return sorted((source, where) for where, source in found.items())


class Kubectl:
    """The kubectl binary bound to one API server: its namespace, kubeconfig and jail.

    `home` is a private folder of the trusted side (kubeconfig, scratch files); `netns` is
    the path of the network namespace the API server listens in (None: the caller's own,
    for tests of the jail alone)."""

    def __init__(
        self,
        binary: str,
        server: str,
        home: Path,
        *,
        token: str,
        netns: Path | None = None,
        timeout_s: float = 10.0,
        output_bytes: int = 16384,
    ) -> None:
        self.binary = binary
        self.home = home
        self.netns = netns
        self.timeout_s = timeout_s
        self.output_bytes = output_bytes
        self.kubeconfig = home / "kubeconfig"
        # The cluster's token travels in the server URL (see emulators/k8s/apiserver.py):
        # kubectl sends no bearer token over plain http.
        if token not in server:
            raise EnvironmentFailure(f"the API server URL {server} does not carry its token")
        self.kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: netgauge\n  cluster:\n"
            f"    server: {server}\ncontexts:\n- name: netgauge\n  context:\n"
            "    cluster: netgauge\n    user: netgauge-agent\n    namespace: default\n"
            "current-context: netgauge\nusers:\n- name: netgauge-agent\n  user: {}\n"
        )
        self.kubeconfig.chmod(0o644)  # read by the jail's uid, bound read-only
        (home / "work").mkdir(exist_ok=True)
        (home / "stdin").touch()
        self.cache = home / "cache"
        self._warm_cache()
        self.cgroup = cgroup.MemoryCgroup.create("kubectl", JAIL_MEMORY_BYTES, pids=JAIL_PIDS)
        self.jail = Jail(
            ro_binds=[
                (staged(binary), "/ngk/bin/kubectl"),
                *[(path, f"/ngk/bin/{name}") for name, path in TOOLS.items()],
                *shared_libraries(TOOLS.values()),
                (str(self.kubeconfig), "/ngk/kubeconfig"),
                (str(home / "stdin"), "/ngk/stdin"),
                (str(home / "work"), "/ngk/work"),
                (str(self.cache), "/ngk/cache"),
            ],
            tmpfs=("/tmp", "/ngk/home"),
            uid=JAIL_UID,
            env={
                "PATH": "/ngk/bin",
                "HOME": "/ngk/home",
                "KUBECONFIG": "/ngk/kubeconfig",
                "KUBECACHEDIR": "/ngk/cache",
                "KUBERC": "off",
                "KUBE_EDITOR": "/ngk/bin/cp /ngk/stdin",  # no quotes: run without a shell
                "KUBECTL_INTERACTIVE_DELETE": "false",
                "TMPDIR": "/tmp",
                "LANG": "C.UTF-8",
            },
            cwd="/ngk/work",
            hostname="kubectl",
            proc=False,  # kubectl needs no /proc; the jail then shows no process at all
        )
        self._self_test()

    def _self_test(self) -> None:
        """One fixed command through the jail, so a jail that cannot start (no bubblewrap,
        no user namespaces) fails the environment here, not an agent's step later."""
        got = self.run(Command(["get", "namespaces", "-o", "name"]))
        if got.status != "ok" or "namespace/default" not in got.output:
            self.close()
            raise EnvironmentFailure(
                f"the kubectl jail does not work ({got.status}): {got.output[-500:]}"
            )

    def _warm_cache(self) -> None:
        """Fill the discovery and OpenAPI caches once, with fixed commands of ours, so the
        jail can read them (bound read-only: no command can poison a later one)."""
        self.cache.mkdir(exist_ok=True)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(self.cache),
            "KUBERC": "off",
        }
        enter = ["nsenter", f"--net={self.netns}"] if self.netns is not None else []
        for args in (["api-resources"], ["get", "networkpolicies", "-A", "-o", "yaml"]):
            try:
                done = subprocess.run(
                    [*enter, self.binary, *args], env=env, capture_output=True, timeout=60
                )
            except (OSError, subprocess.TimeoutExpired) as err:
                raise EnvironmentFailure(f"kubectl could not reach the API server: {err}") from err
            if done.returncode != 0:
                raise EnvironmentFailure(
                    f"kubectl {' '.join(args)} failed against the API server: "
                    f"{done.stderr.decode(errors='replace').strip()[-300:]}"
                )
        for path in (self.cache, *self.cache.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)

    def close(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def _reap(self) -> None:
        """Nothing a command started outlives it: kill what is left in its cgroup. The
        jail's last tasks are usually still exiting (the kernel tears the pid namespace
        down after its first process); a short wait for them is cheaper than a kill loop."""
        if self.cgroup is None:
            return
        deadline = time.monotonic() + 0.05
        while self.cgroup.pids() and time.monotonic() < deadline:
            time.sleep(0.0005)
        self.cgroup.kill_all()

    def argv(self, cmd: Command) -> list[str]:
        """The trusted command line that runs `cmd` jailed in the API server's namespace."""
        enter = ["nsenter", f"--net={self.netns}"] if self.netns is not None else []
        joined = self.cgroup.join_prefix() if self.cgroup is not None else []
        return [*joined, *enter, *self.jail.argv(["kubectl", *cmd.argv])]

    def run(self, cmd: Command) -> Result:
        """Run an already-checked command in a fresh scratch folder."""
        for name in cmd.files:
            if not _FILE_NAME.match(name):
                return Result(1, f"error: file name {name!r} is not allowed", "exec_error", 0.0)
        stdin = self.home / "stdin"
        try:
            work = self.home / "work"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            work.chmod(0o755)  # read by the jail's uid; kubectl writes only to its tmpfs
            for name, text in cmd.files.items():
                (work / name).write_text(text)
            stdin.write_text(cmd.stdin)
            stdin.chmod(0o644)
        except OSError as err:
            raise EnvironmentFailure(f"cannot stage the command's files: {err}") from err
        kills = self.cgroup.oom_kills() if self.cgroup is not None else 0
        started = time.perf_counter()
        with stdin.open("rb") as source:
            proc = process.start(self.argv(cmd), stdin=source)
        got = process.collect(
            proc, cmd.argv, timeout_s=self.timeout_s, output_bytes=self.output_bytes
        )
        seconds = time.perf_counter() - started
        oom = False
        if self.cgroup is not None:
            oom = self.cgroup.oom_kills() > kills
        self._reap()
        text = got.output.rstrip()
        if got.timed_out:
            text += f"\n[kubectl was stopped after {self.timeout_s:g} s]"
            return Result(-9, text.strip(), "timeout", seconds)
        if got.truncated:
            text += f"\n[output cut: only the first {self.output_bytes} bytes are shown]"
            return Result(got.exit_code or -9, text, "resource_limit", seconds)
        if oom:
            text += f"\n[kubectl passed its memory limit of {JAIL_MEMORY_BYTES >> 20} MB]"
            return Result(got.exit_code or -9, text.strip(), "resource_limit", seconds)
        code = got.exit_code if got.exit_code is not None else -9
        return Result(
            code, text, "ok" if code == 0 or _found_a_diff(cmd, code) else "exec_error", seconds
        )
