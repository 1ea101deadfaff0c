"""Prompting strategies: the chat messages an LLM agent sends for a turn.

A strategy composes worked examples (user task / assistant reply pairs, chosen by
pipeline/llm/examples.py) with a way of reasoning (none, step by step, or ReAct's
Thought / Action turns). Every strategy then sees the same things a human operator would:
the app's first observation (which states the task and the reply format), then one
observation per later turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.agents import Exchange

Message = dict[str, str]

SYSTEM = (
    "You are an expert network engineer. You operate a network through the interface the "
    "task describes, one reply per turn. Follow the task's reply format exactly."
)

STYLE = {
    "none": "",
    "cot": (
        " Think step by step first: write your reasoning, then end your reply with the "
        "answer in the required format."
    ),
    "react": (
        " Work in Thought / Action / Observation turns: write 'Thought:' followed by your "
        "reasoning, then 'Action:' followed by exactly one action in the required format. "
        "Each action's result comes back as 'Observation:'."
    ),
}


def messages(
    reasoning: str,
    observation: str,
    history: Sequence[Exchange],
    examples: Sequence[tuple[str, str]] = (),
) -> list[Message]:
    """The whole conversation for the next reply (see `parts`)."""
    head, turns = parts(reasoning, observation, history, examples)
    return [*head, *(m for turn in turns for m in turn)]


def parts(
    reasoning: str,
    observation: str,
    history: Sequence[Exchange],
    examples: Sequence[tuple[str, str]] = (),
) -> tuple[list[Message], list[tuple[Message, Message]]]:
    """(head, turns): the system prompt for `reasoning`, the worked examples and the task;
    then one (reply, next observation) pair per past turn, the last ending with the
    observation to answer now (pipeline/llm/context.py fits them to the context)."""
    head: list[Message] = [{"role": "system", "content": SYSTEM + STYLE[reasoning]}]
    for task, reply in examples:
        head += [{"role": "user", "content": task}, {"role": "assistant", "content": reply}]
    observe = _react_observation if reasoning == "react" else _plain
    seen = [past.observation for past in history] + [observation]
    head.append({"role": "user", "content": seen[0]})
    turns = [
        (
            {"role": "assistant", "content": past.reply},
            {"role": "user", "content": observe(seen[number + 1])},
        )
        for number, past in enumerate(history)
    ]
    return head, turns


def _plain(text: str) -> str:
    return text


def _react_observation(text: str) -> str:
    return f"Observation: {text}"


def reprompt(problem: str, instructions: str) -> str:
    """NetLLMBench's first repair: say the format was wrong."""
    return (
        f"Your reply could not be used: {problem}. Reply again with {instructions}, "
        "and nothing that could be mistaken for it."
    )


def reprompt_with_example(problem: str, instructions: str, example: str) -> str:
    """NetLLMBench's second repair: show an example of the right format."""
    return (
        f"Your reply could still not be used: {problem}. Reply with {instructions}. "
        f"This is an example of a reply in the right format (for another task):\n\n{example}"
    )


def master_extraction(instructions: str, example: str, reply: str) -> list[Message]:
    """NetLLMBench's last repair: a (larger) master model extracts the action."""
    return [
        {
            "role": "system",
            "content": "You turn a model's reply into the exact format a program can parse.",
        },
        {
            "role": "user",
            "content": (
                f"The reply below should contain {instructions}, but it cannot be parsed. "
                "Extract the intended action and answer with only that, in the required "
                f"format. Example of the format:\n\n{example}\n\nThe reply:\n\n{reply}"
            ),
        },
    ]
