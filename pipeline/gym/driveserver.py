"""The server behind `python -m pipeline.gym.drive`: one episode of a NetGaugeEnv, one
request at a time on a unix socket (pipeline/gym/drive.py says what a player sees).

Requests and answers are one JSON object each, a request ending at the client's shutdown:

    {"op": "step", "reply": TEXT}   -> {"text": observation, "lines": [status line(s)]}
    {"op": "status"}                -> {"lines": [status line]}
    {"op": "end", "reveal": BOOL}   -> {"lines": ["verdict: ...", (truth lines)]}; then exit
    {"op": "ping"}                  -> {"lines": []}

The environment is used on this process's main thread only. The ground truth is read only
by `end` with reveal. A request past MAX_REQUEST bytes, or one that is not a JSON object of
a known op, is answered with an error and changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

from pipeline.answers import counts
from pipeline.core import StepStatus, canonical_json
from pipeline.errors import NetGaugeError
from pipeline.files import write_whole
from pipeline.play import kib

SOCKET = "sock"
READY = "ready.json"  # the server's first words: the first observation, or why it failed
MAX_REPLY_ARG = 2 << 20  # characters of a reply read from stdin: past the play loop's bound
MAX_REQUEST = 16 << 20  # bytes of one request: a reply of MAX_REPLY_ARG, JSON-escaped


def serve(args: argparse.Namespace, folder: Path) -> int:
    """Start the episode, say so in READY, answer requests until `end` or idleness."""
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        episode = Episode(args)
    except (NetGaugeError, ValueError, StopIteration) as err:
        write_whole(folder / READY, json.dumps({"error": f"{type(err).__name__}: {err}"}))
        return 3
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            path = folder / SOCKET
            path.unlink(missing_ok=True)
            listener.bind(str(path))
            os.chmod(path, 0o600)
            listener.listen(4)
            listener.settimeout(args.idle_s)
            episode.record({"turn": 0, "observation": episode.first})
            write_whole(folder / READY, json.dumps(episode.opening()))
            while not episode.ended:
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    break
                with conn:
                    conn.settimeout(60)
                    answer = episode.handle(_request(conn))
                    conn.sendall(json.dumps(answer).encode())
    finally:
        episode.close()
        (folder / SOCKET).unlink(missing_ok=True)
    return 0


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # as Ctrl-C: the finally below closes the environment


def _request(conn: socket.socket) -> Any:
    chunks, size = [], 0
    try:
        while chunk := conn.recv(1 << 16):
            size += len(chunk)
            if size > MAX_REQUEST:
                return {"op": "too_large"}
            chunks.append(chunk)
        return json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None


class Episode:
    """The env, its one episode, and what the driver shows of it."""

    def __init__(self, args: argparse.Namespace) -> None:
        from pipeline.gym.env import NetGaugeEnv

        overrides = list(args.override)
        if args.task is not None:
            overrides.append(f"app.task={args.task}")
        self.folder = Path(args.dir)
        self.env = NetGaugeEnv(
            args.app, levels=[args.level], seed=args.seed, queries=args.index + 1,
            overrides=overrides, max_turns=args.max_turns, data_dir=args.data_dir,
        )  # fmt: skip
        self.first, _ = self.env.reset(options={"level": args.level, "index": args.index})
        self.ended = False
        self.over: str | None = None  # why no further step can be played

    def opening(self) -> dict[str, Any]:
        return {"text": self.first, "lines": [self._status()]}

    def handle(self, request: Any) -> dict[str, Any]:
        op = request.get("op") if isinstance(request, dict) else None
        if op == "ping":
            return {"lines": []}
        if op == "status":
            return {"lines": [self._status()]}
        if op == "step":
            reply = request.get("reply")
            if not isinstance(reply, str):
                return {"error": "a step needs the reply text"}
            return self._step(reply)
        if op == "end":
            return self._end(bool(request.get("reveal")))
        if op == "too_large":
            return {"error": f"the request is over {MAX_REQUEST} bytes; nothing was played"}
        return {"error": "not a request of the driver (step, status, end)"}

    def _step(self, reply: str) -> dict[str, Any]:
        if self.over is not None:
            return {"error": f"the episode is over ({self.over}); run end"}
        loop = self.env.loop
        assert loop is not None
        result = loop.step(reply)
        self.record({"turn": loop.turn, "reply": reply, "status": str(result.status),
                     "observation": result.output})  # fmt: skip
        lines = [self._status(str(result.status))]
        code = 0
        if result.status is StepStatus.ENV_ERROR:
            self.over, code = f"the environment failed: {result.error}", 4
        elif result.done:
            self.over = "the environment ended it" + (" (answer recorded)" if result.answer else "")
        elif loop.at_limit:
            self.over = f"the turn budget ({loop.max_turns}) is used up"
        if self.over is not None:
            lines.append(f"[episode over: {self.over}; run end]")
        return {"text": result.output, "lines": lines, "code": code}

    def _status(self, status: str | None = None) -> str:
        loop = self.env.loop
        assert loop is not None
        turns = loop.max_turns or 0
        parts = [f"turn {loop.turn} of {turns}", f"{max(0, turns - loop.turn)} turns left"]
        if loop.read_budget is not None:
            parts.append(f"read {kib(loop.bytes_read)}, {kib(loop.read_left or 0)} left")
        if status is not None:
            parts.append(f"status {status}")
        return "[" + " | ".join(parts) + "]"

    def _end(self, reveal: bool) -> dict[str, Any]:
        from pipeline.scoring import judge

        loop, query = self.env.loop, self.env.current_query
        assert loop is not None and query is not None
        verdict = judge(self.env.app, query, loop.steps)
        score = verdict.score if verdict.score is not None else float(verdict.correct)
        tally = counts(loop.steps)
        lines = [
            f"verdict: outcome={verdict.outcome} correct={str(verdict.correct).lower()} "
            f"safe={str(verdict.safe).lower()} score={score:.3f} turns={loop.turn} "
            f"commands={tally['commands']} blocked={tally['blocked']} "
            f"bytes_read={loop.bytes_read}"
        ]
        if reveal:
            lines += [
                f"query: {query.query_id} key {query.key} task {query.task} "
                f"operation {query.operation}",
                f"ground truth: {canonical_json(query.ground_truth)}",
            ]
            if verdict.error:
                lines.append(f"verdict error: {verdict.error}")
        self.ended = True
        return {"lines": lines}

    def record(self, entry: dict[str, Any]) -> None:
        with open(self.folder / "transcript.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=True) + "\n")

    def close(self) -> None:
        self.env.close()
