"""Keeping a request within the model's context: which past turns an agent still sends.

A request is the system prompt, the worked examples, the episode's first observation
(the task), the past turns (the agent's reply and the next observation each) and the
latest observation; the model's reply needs room too. `fit` leaves out the oldest past
turns until the estimate fits the budget (and at most `keep_turns` remain), and says how
many it left out in the first kept observation. The task and the latest observation are
never left out: when even they do not fit, there is nothing sensible to send, and the
episode ends as `context_overflow` (`ContextOverflow`).

Tokens are estimated from characters (`chars_per_token`, on the long side: an
overestimate only leaves out a turn more). A server that still refuses the request for
its length is answered by leaving out half of the remaining past turns and trying again.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.errors import ContextOverflow

Message = dict[str, str]
PER_MESSAGE = 8  # the chat template's tokens around each message, estimated
__all__ = ["ContextOverflow", "estimate", "fit"]


def estimate(messages: Sequence[Message], chars_per_token: float) -> int:
    return sum(len(m["content"]) / chars_per_token + PER_MESSAGE for m in messages).__ceil__()


def fit(
    head: list[Message],
    turns: list[tuple[Message, Message]],
    *,
    budget: int,
    keep_turns: int | None,
    chars_per_token: float,
) -> tuple[list[Message], int]:
    """(the messages to send, how many past turns were left out). `head` is the system
    prompt, the examples and the task; `turns` the (reply, next observation) pairs, oldest
    first, the last one ending with the observation to answer (always kept)."""
    if not turns:
        if estimate(head, chars_per_token) > budget:
            raise ContextOverflow(_overflow(head, budget, chars_per_token))
        return list(head), 0
    *past, last = turns
    kept = past if keep_turns is None else past[len(past) - keep_turns :] if keep_turns else []
    while True:
        dropped = len(past) - len(kept)
        chat = _assemble(head, [*kept, last], dropped)
        if estimate(chat, chars_per_token) <= budget:
            return chat, dropped
        if not kept:
            raise ContextOverflow(_overflow(chat, budget, chars_per_token))
        kept = kept[1:]


def _overflow(chat: list[Message], budget: int, chars_per_token: float) -> str:
    return (
        f"the task and the latest turn alone need about {estimate(chat, chars_per_token)} "
        f"tokens; the model's context leaves {budget} for the request"
    )


def _assemble(
    head: list[Message], kept: list[tuple[Message, Message]], dropped: int
) -> list[Message]:
    chat = list(head)
    for i, (reply, observation) in enumerate(kept):
        if i == 0 and dropped:
            note = f"({dropped} earlier turns are left out to fit the context.)\n\n"
            observation = {**observation, "content": note + observation["content"]}
        chat += [reply, observation]
    return chat
