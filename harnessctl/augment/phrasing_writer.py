"""Viewer phrasings written by a teacher model: ``harnessctl phrasings write FILE --model M``.

A team that has no chat logs to draw its viewers' phrasings from can ask a capable model for
them. Per message kind the model gets the kind's brief (what the viewer asks, the placeholder
rule) and the built-in *training* templates as examples — never the held-out ones — and answers
one phrasing per line. Every line goes through :func:`harnessctl.sim.phrasings.check_phrasing`
(only the kind's placeholders, none of the suites' held-out messages, no repeats); what fails is
counted by reason and dropped. The file is written after each kind, so an interrupted run keeps
the kinds it finished, and a rerun keeps what the file holds and asks only for what is missing.
Answers are cached on disk under a hash of the model and the prompt
(:class:`~harnessctl.augment.llm_paraphrase.LiteLLMParaphraser`), API keys come from the
environment only.

The result is a file for review, like any harness edit: read it, delete what you would not
train on, commit it, then ``augment --trajectories N --phrasings FILE``.

>>> report = write_phrasings("viewers.yaml", "openai/gpt-4o-mini", per_kind=8)   # doctest: +SKIP
>>> report.kept["price"], report.refused                                          # doctest: +SKIP
(8, {'held_out': 1})
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.sim.phrasings import (
    KIND_DESCRIPTIONS,
    PLACEHOLDER_MEANINGS,
    check_phrasing,
    kind_placeholders,
    load_phrasings,
    message_key,
    placeholder_rule,
)
from harnessctl.sim.templates import TEMPLATES, templates_for

from .llm_paraphrase import LiteLLMParaphraser

#: Requests per kind at most (each asks for what is still missing).
MAX_ROUNDS = 3
_SYSTEM = (
    "You write chat messages that viewers of a live-commerce stream type to the host, Mia. "
    "Write like real viewers: short, casual, varied words and sentence shapes, sometimes chat "
    "shorthand or an emoji. Answer with the messages only, one per line, no numbering, no quotes."
)
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass
class PhrasingReport:
    """What one ``write_phrasings`` run did; ``kept`` counts the file's phrasings per kind."""

    out: str
    model: str
    kept: dict[str, int] = field(default_factory=dict)
    added: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # reason -> lines
    calls: int = 0  # model calls made (cache misses)
    short: list[str] = field(default_factory=list)  # kinds left with fewer than asked

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def phrasing_prompt(kind: str, n: int, have: Iterable[str] = ()) -> list[dict[str, str]]:
    """The chat messages that ask for ``n`` new phrasings of ``kind`` (also the cache key).

    >>> phrasing_prompt("price", 5)[1]["content"].splitlines()[0]
    'Write 5 new messages in which a viewer asks the price of the product.'
    """
    allowed, _ = kind_placeholders(kind)
    lines = [f"Write {n} new messages in which a viewer {KIND_DESCRIPTIONS[kind]}."]
    if allowed:
        lines.append(f"Placeholders, written exactly with their braces: {placeholder_rule(kind)}.")
        lines += [f"  {{{p}}}: {PLACEHOLDER_MEANINGS[p]}" for p in sorted(allowed)]
    else:
        lines.append("Use no braces.")
    lines.append("Messages viewers already write (do not repeat them):")
    lines += [f"  {t}" for t in [*templates_for(kind, "train"), *have]]
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def parse_answer(answer: str) -> list[str]:
    """The phrasings in a model's answer: one per line, list marks and wrapping quotes removed.

    >>> parse_answer('1. "how much for {this}?"\\n- {this} price pls\\n\\n')
    ['how much for {this}?', '{this} price pls']
    """
    out = []
    for line in answer.splitlines():
        text = _LIST_MARK.sub("", line).strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1].strip()
        if text:
            out.append(text)
    return out


def refusal_reason(problem: str) -> str:
    """A short name for what :func:`check_phrasing` (or the writer) found wrong."""
    for needle, reason in (
        ("held-out", "held_out"),
        ("already a built-in", "builtin"),
        ("repeats", "repeat"),
        ("needs", "missing_placeholder"),
        ("placeholder", "bad_placeholder"),
        ("unmatched", "bad_placeholder"),
        ("longer than", "too_long"),
    ):
        if needle in problem:
            return reason
    return "other"


def write_phrasings(
    out: str | Path,
    model: str,
    *,
    per_kind: int = 8,
    kinds: Iterable[str] | None = None,
    api_base: str | None = None,
    cache_dir: str | Path | None = None,
    backend: Any = None,
    on_kind: Callable[[int, int, str], None] | None = None,
) -> PhrasingReport:
    """Ask ``model`` for ``per_kind`` phrasings of each kind (all by default) into the YAML file
    ``out``; phrasings the file already holds are kept and count. ``backend`` replaces the model
    client (any object with ``generate``). Raises :class:`HarnessError` when ``out`` exists and is
    not a good phrasings file, ``ModelError`` when the model cannot be reached."""
    wanted = list(kinds) if kinds is not None else list(TEMPLATES)
    unknown = [k for k in wanted if k not in TEMPLATES]
    if unknown:
        raise ValueError(f"unknown message kind {unknown[0]!r}; kinds are {', '.join(TEMPLATES)}")
    if per_kind < 1:
        raise ValueError(f"per_kind must be at least 1, got {per_kind}")
    out = Path(out)
    have: dict[str, list[str]] = load_phrasings(out) if out.exists() else {}
    writer = LiteLLMParaphraser(model, api_base=api_base, cache_dir=cache_dir, temperature=0.9, backend=backend)
    report = PhrasingReport(out=str(out), model=model)
    for i, kind in enumerate(wanted):
        kept = have.setdefault(kind, [])
        seen = {message_key(t) for t in kept}
        for _ in range(MAX_ROUNDS):
            missing = per_kind - len(kept)
            if missing <= 0:
                break
            before = len(kept)
            for text in parse_answer(writer.complete(phrasing_prompt(kind, missing, kept))):
                problem = "is longer than 200 characters" if len(text) > 200 else check_phrasing(kind, text)
                if problem is None and message_key(text) in seen:
                    problem = "repeats a phrasing of the file"
                if problem is not None:
                    reason = refusal_reason(problem)
                    report.refused[reason] = report.refused.get(reason, 0) + 1
                    continue
                if len(kept) < per_kind:
                    kept.append(text)
                    seen.add(message_key(text))
                    report.added += 1
            if len(kept) == before:  # the same prompt again would get the same (cached) answer
                break
        if len(kept) < per_kind:
            report.short.append(kind)
        if not kept:
            del have[kind]
        _write(out, have)
        if on_kind is not None:
            on_kind(i + 1, len(wanted), kind)
    report.kept = {k: len(v) for k, v in have.items()}
    report.calls = writer.calls
    return report


def _write(out: Path, phrasings: dict[str, list[str]]) -> None:
    """The file, atomically, kinds in the simulator's order; nothing when there is nothing yet."""
    if not phrasings:
        return
    lines = ["# Viewer phrasings per message kind (harnessctl phrasings write); review before training.", "phrasings:"]
    for kind in (k for k in TEMPLATES if k in phrasings):
        lines.append(f"  {kind}:")
        # JSON strings are YAML double-quoted scalars: emoji and quotes survive as they are.
        lines += [f"    - {json.dumps(t, ensure_ascii=False)}" for t in phrasings[kind]]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(out)
