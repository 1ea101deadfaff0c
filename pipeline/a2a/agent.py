"""`A2AAgent`: an agent at a URL, played over A2A one message per turn.

The first message holds the task (the episode's first observation) and, unless
`agent.instructions` is off, the app's reply format with an example (in a detect or
localize episode, also how to answer, with an example of the answer: pipeline/answers.py);
every later message is the observation that followed the agent's last reply. The agent's
answer goes through the app's normal parsing, like any agent's reply. What happens when it
fails or is late is pipeline/a2a/conversation.py's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from omegaconf import DictConfig, OmegaConf

from pipeline import answers
from pipeline.a2a.config import A2AAgentConfig
from pipeline.a2a.conversation import Conversation
from pipeline.agents import EpisodeEnd, Exchange, Reply
from pipeline.core import App, Query, ReplyFormat
from pipeline.diagnosis import example


def first_message(task: str, reply_format: ReplyFormat, instructions: bool) -> str:
    """The task, then how to reply (the app's format and an example)."""
    if not instructions:
        return task
    text = (
        f"{task}\n\nReply with {reply_format.instructions}. Each reply is one turn: you get "
        f"its result in the next message.\nExample of a reply:\n{reply_format.example}"
    )
    spec = getattr(reply_format, "spec", None)
    if isinstance(spec, answers.AnswerSpec):
        text += f"\nExample of an answer (it ends the episode):\n{example(spec.task)}"
    return text


class A2AAgent:
    def __init__(self, cfg: DictConfig | A2AAgentConfig, app: App) -> None:
        self.cfg = cfg if isinstance(cfg, A2AAgentConfig) else OmegaConf.to_object(cfg)
        self.name = self.cfg.name
        self._url = self.cfg.require_url()
        self._headers = self.cfg.resolved_headers()
        self._app = app
        self._talks: dict[str, Conversation] = {}
        self._lock = threading.Lock()

    @contextmanager
    def episode(self, query: Query, max_turns: int) -> Iterator[EpisodeEnd]:
        talk = Conversation(
            self._url, self._headers, self.cfg.turn_timeout_s, self.cfg.episode_timeout_s
        )
        with self._lock:
            self._talks[query.query_id] = talk
        try:
            yield EpisodeEnd()
        finally:
            with self._lock:
                del self._talks[query.query_id]
            talk.close()

    def reply(self, query: Query, observation: str, history: list[Exchange], turn: int) -> Reply:
        with self._lock:
            talk = self._talks.get(query.query_id)
        if talk is None:
            raise RuntimeError(f"{query.query_id}: an A2A agent replies only inside episode()")
        fmt = answers.reply_format(self._app, query)
        text = first_message(observation, fmt, self.cfg.instructions)
        return talk.send(text if turn == 1 else observation)
