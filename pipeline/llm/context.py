"""Keeping a request within the model's context: which past turns an agent still sends.

A request is the system prompt, the worked examples, the episode's first observation
(the task), the past turns (the agent's reply and the next observation each), the latest
observation, and the turn's own later messages (`tail`: diagnostics and their results,
repair re-prompts); the model's reply needs room too. `fit` leaves out the oldest past
turns until the estimate fits the budget (and at most `keep_turns` remain), and says how
many it left out in the first kept observation. The task, the latest observation and the
tail are never left out: when even they do not fit, there is nothing sensible to send,
and the episode ends as `context_overflow` (`ContextOverflow`). Every request of a turn
is fitted, the repair chain's and the diagnostics' too.

With a `condense` policy (`agent.context.observations: changes`), each observation after
the task is shown as what changed since the observation before it in the request (the
task's, when the turns between were left out), as the app words it; an observation the
app cannot condense is shown whole.

Tokens are estimated from characters (`chars_per_token`, on the long side: an
overestimate only leaves out a turn more). A server that still refuses the request for
its length is answered by leaving out half of the remaining past turns and trying again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipeline.errors import ContextOverflow

Message = dict[str, str]
# (the previous observation's text, this one's) -> this one as changes, or None (keep it)
Condense = Callable[[str, str], str | None]
PER_MESSAGE = 8  # the chat template's tokens around each message, estimated
__all__ = ["Condense", "ContextOverflow", "estimate", "fit"]


def estimate(messages: Sequence[Message], chars_per_token: float) -> int:
    return sum(len(m["content"]) / chars_per_token + PER_MESSAGE for m in messages).__ceil__()


def fit(
    head: list[Message],
    turns: list[tuple[Message, Message]],
    *,
    budget: int,
    keep_turns: int | None,
    chars_per_token: float,
    tail: Sequence[Message] = (),
    condense: Condense | None = None,
) -> tuple[list[Message], int]:
    """(the messages to send, how many past turns were left out). `head` is the system
    prompt, the examples and the task; `turns` the (reply, next observation) pairs, oldest
    first, the last one ending with the observation to answer (always kept); `tail` the
    turn's messages after it (always kept)."""
    if not turns:
        chat = [*head, *tail]
        if estimate(chat, chars_per_token) > budget:
            raise ContextOverflow(_overflow(chat, budget, chars_per_token, len(tail)))
        return chat, 0
    *past, last = turns
    kept = past if keep_turns is None else past[len(past) - keep_turns :] if keep_turns else []
    while True:
        dropped = len(past) - len(kept)
        chat = [*_assemble(head, [*kept, last], dropped, condense), *tail]
        if estimate(chat, chars_per_token) <= budget:
            return chat, dropped
        if not kept:
            raise ContextOverflow(_overflow(chat, budget, chars_per_token, len(tail)))
        kept = kept[1:]


def _overflow(chat: list[Message], budget: int, chars_per_token: float, later: int) -> str:
    what = "the task and the latest turn alone"
    if later:
        what = f"the task, the latest turn and this turn's {later} later messages alone"
    return (
        f"{what} need about {estimate(chat, chars_per_token)} tokens; the model's context "
        f"leaves {budget} for the request"
    )


def _assemble(
    head: list[Message],
    kept: list[tuple[Message, Message]],
    dropped: int,
    condense: Condense | None,
) -> list[Message]:
    chat = list(head)
    before = head[-1]["content"]  # the task: the observation before the first kept one
    for i, (reply, observation) in enumerate(kept):
        text = observation["content"]
        shown = condense(before, text) if condense is not None else None
        before = text
        if shown is None:
            shown = text
        if i == 0 and dropped:
            shown = f"({dropped} earlier turns are left out to fit the context.)\n\n{shown}"
        chat += [reply, {**observation, "content": shown}]
    return chat
