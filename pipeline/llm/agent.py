"""`LLMAgent`: a served model behind the agent interface, with NetLLMBench's repair chain.

One turn: the strategy's messages go to the model; if the app's reply format rejects the
reply, the chain tries, in order and each at most once per turn (each stage can be turned
off in the agent config): (1) a re-prompt saying the format was wrong, (2) a re-prompt
with an example of the right format, (3) a master model extracting the action. What is
still unparseable goes to the environment as it is and becomes a parse_error step —
scored, never retried forever. Every model call is recorded (the `calls` table).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline.agents import Exchange, Reply
from pipeline.core import App, Query
from pipeline.llm import prompts
from pipeline.llm.config import LLMAgentConfig
from pipeline.llm.models import ChatBackend, ModelPool
from pipeline.serving.client import ChatResult

STAGES = ("act", "reprompt", "example", "master")


class LLMAgent:
    def __init__(self, cfg: DictConfig, app: App, *, model: DictConfig, models: ModelPool) -> None:
        self.cfg: LLMAgentConfig = OmegaConf.to_object(cfg)
        self.name = self.cfg.name
        self._app = app
        self._format = app.reply_format
        self._backend = models.backend(model)
        self._master: ChatBackend | None = None
        if self.cfg.repair.master_model:
            from pipeline.plan import load_choice

            self._master = models.backend(load_choice("model", self.cfg.repair.master_model))

    def reply(self, query: Query, observation: str, history: list[Exchange], turn: int) -> Reply:
        chat = prompts.messages(
            self.cfg.strategy, observation, history, getattr(self._app, "few_shot", ())
        )
        calls: list[dict[str, Any]] = []
        text = self._call(self._backend, chat, "act", calls)
        problem = self._format.check(text)
        repair = self.cfg.repair
        fmt = self._format
        if problem and repair.reprompt:
            chat += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": prompts.reprompt(problem, fmt.instructions)},
            ]
            text = self._call(self._backend, chat, "reprompt", calls)
            problem = fmt.check(text)
        if problem and repair.example:
            note = prompts.reprompt_with_example(problem, fmt.instructions, fmt.example)
            chat += [{"role": "assistant", "content": text}, {"role": "user", "content": note}]
            text = self._call(self._backend, chat, "example", calls)
            problem = fmt.check(text)
        if problem and self._master is not None:
            extracted = self._call(
                self._master,
                prompts.master_extraction(fmt.instructions, fmt.example, text),
                "master",
                calls,
            )
            if fmt.check(extracted) is None:
                text = extracted
        return Reply(
            text,
            prompt_tokens=sum(c["prompt_tokens"] for c in calls),
            completion_tokens=sum(c["completion_tokens"] for c in calls),
            calls=calls,
        )

    @staticmethod
    def _call(
        backend: ChatBackend, chat: list[dict[str, str]], purpose: str, calls: list[dict[str, Any]]
    ) -> str:
        result: ChatResult = backend.chat(chat)
        calls.append(
            {
                "purpose": purpose,
                "model": backend.name,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "latency_s": result.latency_s,
                "ttft_s": result.ttft_s,
                "tokens_per_s": result.tokens_per_s,
                "finish_reason": result.finish_reason,
            }
        )
        return result.text
