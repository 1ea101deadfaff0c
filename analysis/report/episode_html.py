"""The HTML of the report's episode pages (analysis/report/episodes.py writes them).

Names: a cell's folder is `cell_slug` of its CELL_KEY values, a model × agent's anchor in
episodes/index.html `who_slug`. Every stored text goes through `_e` or `_pre` (escaped,
NUL and lone surrogates shown escaped, `_pre` cut at FIELD_LIMIT with a visible note); the
pages' Content-Security-Policy allows no script.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import re
from collections.abc import Sequence

FIELD_LIMIT = 16_384  # characters of one reply, command, observation or prompt on a page
CELL_KEY = ("app", "model", "agent", "level", "queries", "variant", "task")
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"
STYLE = """
body { font-family: DejaVu Sans, Arial, sans-serif; margin: 1.5em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
table.t { border-collapse: collapse; font-size: .85em; margin: .5em 0 1em; }
table.t th, table.t td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; }
table.t th { background: #f0f0f0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7; padding: .5em;
      border: 1px solid #e4e4e4; margin: .2em 0 .6em; font-size: .85em; }
.turn { border-left: 4px solid #9ab; padding: .1em .8em; margin: 1em 0; }
.turn.unsafe { border-left-color: #d62728; }
.cut { color: #a05a00; font-style: italic; font-size: .85em; }
.verdict { font-size: 1.1em; padding: .4em .8em; border-radius: 4px; display: inline-block; }
.yes { background: #dff3df; } .no { background: #f8dddd; }
nav { font-size: .9em; margin-bottom: 1em; }
.empty { color: #777; font-size: .85em; }
"""
UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def cell_slug(key: Sequence[object]) -> str:
    """The folder of a cell's pages: its key in readable, file-safe form plus a digest of
    the exact key (two keys that read alike never share a folder)."""
    text = "_".join(str(v) for v in key)
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode()).hexdigest()[:8]
    return f"{UNSAFE_NAME.sub('-', text)[:80]}_{digest}"


def who_slug(model: str, agent: str) -> str:
    """The anchor of a model × agent in episodes/index.html; `agent` as the leaderboard
    names it (`agent@variant` of trial 0 for a variant other than base)."""
    return "who-" + cell_slug((model, agent))


def who_link(model: str, agent: str) -> str:
    """The href (relative to the report's index.html) of a model × agent's cells."""
    return f"episodes/index.html#{who_slug(model, agent)}"


def cell_link(key: Sequence[object]) -> str:
    """The href (relative to the report's index.html) of a cell's episode list; `key` is
    the values of CELL_KEY."""
    return f"episodes/{cell_slug(key)}/index.html"


def _text(value: object) -> str:
    """Printable text of a stored value: lone surrogates and NUL shown escaped."""
    if value is None:
        return ""
    text = str(value)
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _e(value: object) -> str:
    return html.escape(_text(value), quote=True)


def _pre(value: object, length: int | None = None, where: str = "") -> str:
    """A bounded, escaped <pre>; `length` is the stored text's full length (the SQL cut it)."""
    text = _text(value)
    full = len(text) if length is None else int(length)
    text = text[:FIELD_LIMIT]
    if not full:
        return '<p class="empty">(empty)</p>'
    out = f"<pre>{html.escape(text)}</pre>"
    if full > len(text):
        out += (
            f'<p class="cut">cut: {full - len(text):,} of {full:,} characters not shown '
            f"(the whole text: {html.escape(where)})</p>"
        )
    return out


def _json_pre(value: object, where: str, length: int | None = None) -> str:
    """A JSON column pretty-printed when it parses (a cut one does not: shown as stored)."""
    text = _text(value)
    if length is None or length <= len(text):
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=1, ensure_ascii=False)
            length = None
    return _pre(text, length, where)


def _yes(flag: object) -> str:
    if flag is None:
        return "–"
    return '<span class="yes">yes</span>' if flag else '<span class="no">no</span>'


def _num(value: object, fmt: str) -> str:
    if value is None or value != value:  # None or NaN
        return "–"
    return format(value, fmt)


def _page(title: str, nav: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f"<nav>{nav}</nav>{body}</body></html>\n"
    )


def _cell_title(key: tuple) -> str:
    app, model, agent, level, queries, variant, task = key
    return f"{app} · {model} / {agent} · L{level} · n={queries} · {variant} · {task}"


def cell_page(key: tuple, episodes: list[dict], files: list[str]) -> str:
    head = (
        "<tr><th>episode</th><th>seed</th><th>trial</th><th>operation</th><th>outcome</th>"
        "<th>correct</th><th>safe</th><th>score</th><th>turns</th><th>tokens (prompt/compl.)"
        "</th><th>USD</th><th>seconds</th></tr>"
    )
    body = []
    for episode, name in zip(episodes, files, strict=True):
        e = episode
        body.append(
            f'<tr><td><a href="{_e(name)}">{_e(e["query_id"])}</a></td><td>{_e(e["seed"])}</td>'
            f"<td>{_e(e['trial'])}</td><td>{_e(e['operation'])}</td><td>{_e(e['outcome'])}</td>"
            f"<td>{_yes(e['correct'])}</td><td>{_yes(e['safe'])}</td>"
            f"<td>{_num(e['score'], '.3f')}</td><td>{_e(e['iterations'])}</td>"
            f"<td>{_tokens(e)}</td><td>{_num(e['cost_usd'], '.6f')}</td>"
            f"<td>{_num(_seconds(e), '.3f')}</td></tr>"
        )
    correct = sum(bool(e["correct"]) for e in episodes)
    body_html = (
        f"<h1>{_e(_cell_title(key))}</h1>"
        f"<p>{len(episodes)} episodes, {correct} correct.</p>"
        f'<table class="t cell-episodes"><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
        "</table>"
    )
    nav = '<a href="../../index.html">report</a> · <a href="../index.html">all cells</a>'
    return _page(_cell_title(key), nav, body_html)


def _tokens(e: dict) -> str:
    if e["prompt_tokens"] is None and e["completion_tokens"] is None:
        return "–"
    return f"{_num(e['prompt_tokens'], '.0f')}/{_num(e['completion_tokens'], '.0f')}"


def _seconds(e: dict) -> float | None:
    parts = [v for v in (e["latency_s"], e["agent_s"]) if v is not None]
    return sum(parts) if parts else None


_FACTS = (
    ("app", "app"),
    ("model", "model"),
    ("agent", "agent"),
    ("level", "level"),
    ("seed", "seed"),
    ("queries", "queries"),
    ("variant", "variant"),
    ("trial", "trial"),
    ("trial of", "trial_of"),
    ("task", "task"),
    ("operation", "operation"),
    ("size", "size"),
    ("turns", "iterations"),
    ("turn budget", "turn_budget"),
    ("commands", "commands"),
    ("blocked", "blocked"),
    ("bytes read", "bytes_read"),
    ("model calls", "model_calls"),
    ("code version", "code_version"),
)


def episode_page(key: tuple, e: dict, steps: list[dict], calls: dict[tuple, dict]) -> str:
    qid = e["query_id"]
    facts = "".join(f"<tr><th>{_e(name)}</th><td>{_e(e[col])}</td></tr>" for name, col in _FACTS)
    verdict_class = "yes" if e["correct"] else "no"
    verdict = (
        f'<p class="verdict {verdict_class}" id="verdict">outcome: <b>{_e(e["outcome"])}</b>'
        f" · correct: {_yes(e['correct'])} · safe: {_yes(e['safe'])}"
        f" · score: {_num(e['score'], '.3f')}</p>"
        '<table class="t"><tr><th>tokens (prompt/compl.)</th><th>USD</th><th>seconds '
        "(environment + agent)</th><th>tokens/s</th></tr>"
        f"<tr><td>{_tokens(e)}</td><td>{_num(e['cost_usd'], '.6f')}</td>"
        f"<td>{_num(_seconds(e), '.3f')} ({_num(e['latency_s'], '.3f')} + "
        f"{_num(e['agent_s'], '.3f')})</td><td>{_num(e['tokens_per_s'], '.1f')}</td></tr></table>"
    )
    if e.get("error"):
        verdict += f"<h3>Error</h3>{_pre(e['error'], where='episodes.error')}"
    if e.get("answer"):
        verdict += f"<h3>Answer submitted</h3>{_json_pre(e['answer'], 'episodes.answer')}"
    if e.get("detail") and e["detail"] not in ("{}", "null"):
        verdict += f"<h3>Scorer detail</h3>{_json_pre(e['detail'], 'episodes.detail')}"
    if e.get("q_prompt") is None:
        query = '<p class="cut">the query is not in this data directory (no queries shard)</p>'
        truth = query
    else:
        query = _pre(e["q_prompt"], e["q_prompt_len"], "queries.prompt")
        truth = _json_pre(e["q_truth"], "queries.ground_truth", e["q_truth_len"])
    turns = "".join(_turn(s, calls.get((e["seed"], qid, s["turn"]))) for s in steps)
    body = (
        f"<h1>Episode {_e(qid)}</h1>"
        f"<h2>Verdict</h2>{verdict}"
        f'<h2>Query</h2><div id="prompt">{query}</div>'
        f"<h2>Turns ({len(steps)})</h2>{turns or '<p>(no steps recorded)</p>'}"
        f"<h2>Ground truth</h2>{truth}"
        f'<h2>Episode</h2><table class="t">{facts}</table>'
    )
    nav = (
        '<a href="../../index.html">report</a> · <a href="../index.html">all cells</a> · '
        f'<a href="index.html">{_e(_cell_title(key))}</a>'
    )
    return _page(f"{qid} · {_cell_title(key)}", nav, body)


def _turn(s: dict, call: dict | None) -> str:
    where = f"steps, turn {s['turn']}"
    safe = s["safe"]
    used = ""
    if call is not None:
        used = (
            f" · {call['calls']} model call(s), tokens {_num(call['turn_prompt'], '.0f')}/"
            f"{_num(call['turn_completion'], '.0f')}, USD {_num(call['turn_usd'], '.6f')}"
        )
        if call["cache_hits"]:
            used += f", {call['cache_hits']} from the response cache"
        if call["diagnostics"]:
            used += f", {call['diagnostics']} diagnostic(s) (calls table)"
    out = [
        f'<section class="turn{"" if safe or safe is None else " unsafe"}" id="turn-{s["turn"]}">',
        f"<h3>Turn {_e(s['turn'])} · status <b>{_e(s['status'])}</b> · safe {_yes(safe)}"
        f" · exec {_num(s['exec_s'], '.3f')} s · agent {_num(s['agent_s'], '.3f')} s{used}</h3>",
        f"<h4>Reply</h4>{_pre(s['reply'], s['reply_len'], where + ', reply')}",
        f"<h4>Command</h4>{_pre(s['action'], s['action_len'], where + ', action')}",
        f"<h4>Observation</h4>{_pre(s['output'], s['output_len'], where + ', output')}",
    ]
    if s["error"]:
        out.append(f"<h4>Error</h4>{_pre(s['error'], where=where + ', error')}")
    out.append("</section>")
    return "".join(out)


def cells_index(groups: dict[tuple, list[dict]]) -> str:
    by_who: dict[tuple[str, str], list[tuple]] = {}
    for key, episodes in groups.items():
        of = episodes[0]["trial_of"] or key[5]  # the trials of a cell are one agent
        agent = str(key[2]) if of == "base" else f"{key[2]}@{of}"
        by_who.setdefault((str(key[1]), agent), []).append(key)
    parts = ["<h1>Episodes by cell</h1>"]
    for (model, agent), keys in sorted(by_who.items()):
        parts.append(f'<h2 id="{who_slug(model, agent)}">{_e(agent)} · {_e(model)}</h2><ul>')
        for key in keys:
            episodes = groups[key]
            correct = sum(bool(e["correct"]) for e in episodes)
            parts.append(
                f'<li><a href="{cell_slug(key)}/index.html">{_e(_cell_title(key))}</a>: '
                f"{len(episodes)} episodes, {correct} correct</li>"
            )
        parts.append("</ul>")
    return _page("NetGauge episodes", '<a href="../index.html">report</a>', "".join(parts))
