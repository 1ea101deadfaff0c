"""Prompting strategies: the chat messages an LLM agent sends for a turn.

Every strategy sees the same things a human operator would: the app's first observation
(which states the task and the reply format), then one observation per later turn.
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
    "zero_shot": "",
    "few_shot": "",
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
    strategy: str,
    observation: str,
    history: Sequence[Exchange],
    few_shot: Sequence[tuple[str, str]] = (),
) -> list[Message]:
    """The conversation for the next reply under `strategy`."""
    chat: list[Message] = [{"role": "system", "content": SYSTEM + STYLE[strategy]}]
    if strategy == "few_shot":
        for task, reply in few_shot:
            chat += [{"role": "user", "content": task}, {"role": "assistant", "content": reply}]
    observe = _react_observation if strategy == "react" else _plain
    for number, past in enumerate(history):
        chat += [
            {
                "role": "user",
                "content": past.observation if number == 0 else observe(past.observation),
            },
            {"role": "assistant", "content": past.reply},
        ]
    chat.append({"role": "user", "content": observation if not history else observe(observation)})
    return chat


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
