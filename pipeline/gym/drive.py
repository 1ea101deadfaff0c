"""Play one NetGauge episode from a shell, one reply per command (for reference players).

    python -m pipeline.gym.drive start --dir D --app APP --level L [--task T] [--seed S] [--index I]
    python -m pipeline.gym.drive step --dir D 'REPLY'        (or: ... step --dir D - < reply.txt)
    python -m pipeline.gym.drive status --dir D
    python -m pipeline.gym.drive end --dir D [--reveal]

`start` starts a server process holding the episode (a NetGaugeEnv, pipeline/gym/env.py,
reset to query I of level L of seed S) behind a unix socket in D, and prints the first
observation; `step` prints exactly what the environment showed for the reply, then one
status line (turn, turns left, read budget, the step's status); `end` prints one verdict
line, and the ground truth only with --reveal; then the server closes the environment
(its labs, sandboxes) and exits. The server writes D/transcript.jsonl (each turn's reply,
status and observation) and D/server.log; it ends by itself after --idle-s seconds
without a request. The ground truth never leaves the server before `end --reveal`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.config import ROOT
from pipeline.gym.driveserver import MAX_REPLY_ARG, MAX_REQUEST, READY, SOCKET, serve

START_TIMEOUT_S = 1800.0  # generating and validating a lab query can take minutes

EPILOG = """\
files in --dir: sock (the server's socket), ready.json (start's answer), transcript.jsonl
(one JSON line per turn: turn, reply, status, observation), server.log.

start: the query is query --index of level --level drawn with --seed (the pipeline's own
queries for that seed, read from --data-dir's shard when one exists, else drawn and, for
lab apps, validated live: this can take a minute or more). --task picks mitigate, detect
or localize for apps that offer them (detect and localize episodes are read-only and end
with an answer: {"answer": {...}} as the first observation explains). --override passes
Hydra overrides of the app (e.g. app.size=small). The first observation is printed as it
is, then a status line.

step: REPLY is one reply exactly as an agent would write it (one JSON object, a code
block, whatever the first observation asks for); "-" reads it from standard input (for
replies with newlines or longer than a shell argument). Printed: the environment's
observation exactly, then a line
  [turn T of N | N-T turns left | read R KiB, L KiB left | status S]
(the read part only when the episode has a read budget; S is ok, parse_error, blocked,
exec_error, timeout, resource_limit or env_error), and "[episode over: WHY; run end]"
when it ended. A reply after the episode ended is refused.

end: prints one line
  verdict: outcome=O correct=C safe=S score=X turns=T commands=K blocked=B bytes_read=R
and, with --reveal, the query's id and key and its ground truth (for a failure note,
after you finished). The server then stops the environment and exits.

status: the status line of the episode as it stands (nothing of the truth).

exit codes: 0 done; 2 bad arguments or no server in --dir; 3 the server failed (its
reason printed; see server.log); 4 the environment failed during a step (env_error).
"""


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    folder = Path(args.dir)
    try:
        return _run(args, folder)
    except BrokenPipeError:  # `... | head`: the reader left; what was played stays played
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace, folder: Path) -> int:
    try:
        if args.command == "start":
            return _start(args, folder)
        if args.command == "serve":
            return serve(args, folder)
        if args.command == "step":
            reply = args.reply
            if reply == "-":  # any bytes: what is not UTF-8 reaches the app escaped
                reply = sys.stdin.buffer.read(MAX_REPLY_ARG + 1).decode("utf-8", "surrogateescape")
            return _show(_ask(folder, {"op": "step", "reply": reply}))
        if args.command == "status":
            return _show(_ask(folder, {"op": "status"}))
        return _show(_ask(folder, {"op": "end", "reveal": bool(args.reveal)}))
    except DriveError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code


class DriveError(Exception):
    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.gym.drive",
        description="Play one NetGauge episode from a shell, one reply per command: start "
        "it, send replies with step, end it for the verdict.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="{start,step,status,end}"
    )
    for name, what in (
        ("start", "start the episode's server; print the first observation"),
        ("serve", None),  # what start runs in the background: not a player's command
    ):
        helps = {"help": what} if what else {}
        sub = commands.add_parser(name, description=what, **helps)
        sub.add_argument("--dir", required=True, help="the episode's folder (made if missing)")
        sub.add_argument("--app", required=True, help=f"an app config: {_apps()}")
        sub.add_argument(
            "--level", type=int, required=True, help="the level (tier); a wrong one is refused "
            "with the app's levels"
        )  # fmt: skip
        sub.add_argument("--task", default=None, help="mitigate, detect or localize")
        sub.add_argument("--seed", type=int, default=2, help="generation seed (default 2)")
        sub.add_argument("--index", type=int, default=0, help="query index (default 0)")
        sub.add_argument("--data-dir", default="data", help="where stored queries are read")
        sub.add_argument(
            "--override", action="append", default=[], help="a Hydra override, repeatable"
        )
        sub.add_argument("--max-turns", type=int, default=None, help="below the app's own")
        sub.add_argument(
            "--idle-s", type=float, default=7200.0, help="end after this long without a request"
        )
    step = commands.add_parser("step", help="play one reply; print what the env showed")
    step.add_argument("--dir", required=True, help="the episode's folder")
    step.add_argument("reply", help='the reply text, or "-" to read it from standard input')
    status = commands.add_parser("status", help="print the episode's status line")
    status.add_argument("--dir", required=True, help="the episode's folder")
    end = commands.add_parser("end", help="end the episode; print the verdict line")
    end.add_argument("--dir", required=True, help="the episode's folder")
    end.add_argument("--reveal", action="store_true", help="also print the ground truth")
    return parser


def _apps() -> str:
    """The app configs there are (conf/app/ and the app path's), by name."""
    from pipeline.config import choices

    return ", ".join(choices("app"))


def _start(args: argparse.Namespace, folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / SOCKET).exists() and _alive(folder):
        raise DriveError(f"{folder} already holds a running episode; end it first")
    for name in (SOCKET, READY):
        (folder / name).unlink(missing_ok=True)
    argv = [sys.executable, "-m", "pipeline.gym.drive", "serve", *_passed(args)]
    with open(folder / "server.log", "ab") as log:
        server = subprocess.Popen(
            argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (folder / READY).exists():
        if server.poll() is not None:
            tail = (folder / "server.log").read_text(errors="replace")[-2000:]
            raise DriveError(f"the server exited ({server.returncode}) before starting:\n{tail}", 3)
        if time.monotonic() > deadline:
            server.terminate()
            raise DriveError(f"the episode did not start in {START_TIMEOUT_S:.0f} s", 3)
        time.sleep(0.1)
    ready = json.loads((folder / READY).read_text())
    if "error" in ready:
        raise DriveError(ready["error"], 3)
    return _show(ready)


def _passed(args: argparse.Namespace) -> list[str]:
    out = ["--dir", str(Path(args.dir).resolve()), "--app", args.app, "--level", str(args.level)]
    out += ["--seed", str(args.seed), "--index", str(args.index), "--data-dir", args.data_dir]
    out += ["--idle-s", str(args.idle_s)]
    if args.task is not None:
        out += ["--task", args.task]
    if args.max_turns is not None:
        out += ["--max-turns", str(args.max_turns)]
    for item in args.override:
        out += ["--override", item]
    return out


def _alive(folder: Path) -> bool:
    try:
        _ask(folder, {"op": "ping"})
    except DriveError:
        return False
    return True


def _ask(folder: Path, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the episode's server, its one answer."""
    path = folder / SOCKET
    if not path.exists():
        raise DriveError(f"no episode in {folder} (no {SOCKET}); start one first")
    data = json.dumps(request).encode() + b"\n"
    if len(data) > MAX_REQUEST:
        raise DriveError(f"the request is {len(data)} bytes; at most {MAX_REQUEST}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            answer = _read_all(sock)
        except OSError as err:
            raise DriveError(f"the episode's server in {folder} does not answer: {err}") from err
    if not answer:
        raise DriveError(f"the episode's server in {folder} closed without answering", 3)
    return json.loads(answer)


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _show(answer: dict[str, Any]) -> int:
    """Print a server's answer: its text as it is, then its status line."""
    if "error" in answer:
        raise DriveError(answer["error"], answer.get("code", 2))
    text = answer.get("text")
    if text is not None:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    for line in answer.get("lines", []):
        print(line)
    sys.stdout.flush()
    return int(answer.get("code", 0))


if __name__ == "__main__":
    sys.exit(main())
