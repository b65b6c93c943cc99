"""Reply guards: the declarative checks of ``hooks.guards`` applied to a finished reply.

- ``max_chars`` (limit from ``limit`` or a constraint, ``max_reply_chars`` by default):
  ``truncate`` cuts the reply at a word boundary; ``revise`` asks the model for a shorter one.
- ``banned_phrases``: ``replace`` swaps each phrase for ``replacement``; ``revise`` asks the model
  to rewrite without them.

A revise guard gives the model one more turn; if the revision still breaks a guard, the guard
falls back to fixing the text itself (truncate / replace), so what reaches the stream always
obeys the guards.

>>> from harnessctl.harness.model import Guard, Harness, Hooks
>>> h = Harness(name="h", hooks=Hooks(guards=[Guard(type="max_chars", limit=20, action="truncate")]))
>>> out = apply_guards("Glow Serum is $18.99 live tonight", h, allow_revise=False)
>>> out.reply, out.events[0]["action"]
('Glow Serum is…', 'truncate')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harnessctl.harness.model import Harness

__all__ = ["GuardOutcome", "apply_guards", "banned_phrases", "reply_char_limit", "truncate_reply"]


@dataclass
class GuardOutcome:
    reply: str
    events: list[dict[str, Any]] = field(default_factory=list)
    #: Feedback for one more model turn (a revise guard fired and revision is allowed).
    revise_feedback: str | None = None


def reply_char_limit(h: Harness) -> int | None:
    """The reply length in force: the tightest ``max_chars`` guard, else ``max_reply_chars``."""
    limits = [_guard_limit(g, h) for g in h.hooks.guards if g.type == "max_chars"]
    limits = [x for x in limits if x is not None]
    if limits:
        return min(limits)
    v = h.constraint("max_reply_chars")
    return int(v) if v is not None else None


def banned_phrases(h: Harness) -> list[str]:
    """Every phrase a ``banned_phrases`` guard of ``h`` bans."""
    out: list[str] = []
    for g in h.hooks.guards:
        if g.type == "banned_phrases":
            out += [p for p in g.phrases if p and p not in out]
    return out


def apply_guards(reply: str, h: Harness, *, allow_revise: bool) -> GuardOutcome:
    """Check ``reply`` against every guard of ``h`` in order; fix it or ask for a revision."""
    events: list[dict[str, Any]] = []
    feedback: list[str] = []
    text = reply
    for g in h.hooks.guards:
        if g.type == "max_chars":
            limit = _guard_limit(g, h)
            if limit is None or len(text) <= limit:
                continue
            if g.action == "revise" and allow_revise:
                events.append({"guard": "max_chars", "action": "revise", "chars": len(text), "limit": limit})
                feedback.append(
                    f"Your reply has {len(text)} characters; the limit is {limit}. Write it again, shorter."
                )
                continue
            before = len(text)
            text = truncate_reply(text, limit)
            events.append(
                {
                    "guard": "max_chars",
                    "action": "truncate",
                    "chars": before,
                    "limit": limit,
                    "fallback": g.action != "truncate",
                }
            )
        elif g.type == "banned_phrases":
            found = [p for p in g.phrases if p and re.search(re.escape(p), text, re.IGNORECASE)]
            if not found:
                continue
            if g.action == "revise" and allow_revise:
                events.append({"guard": "banned_phrases", "action": "revise", "phrases": found})
                feedback.append(
                    "Do not say " + ", ".join(f'"{p}"' for p in found) + ". Write your reply again without them."
                )
                continue
            for p in found:
                text = re.sub(re.escape(p), g.replacement, text, flags=re.IGNORECASE)
            text = re.sub(r"\s{2,}", " ", text).strip()
            events.append(
                {"guard": "banned_phrases", "action": "replace", "phrases": found, "fallback": g.action != "replace"}
            )
    if feedback:
        return GuardOutcome(reply=reply, events=events, revise_feedback=" ".join(feedback))
    return GuardOutcome(reply=text, events=events)


def truncate_reply(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary when one is near."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _guard_limit(g: Any, h: Harness) -> int | None:
    if g.limit is not None:
        return int(g.limit)
    v = h.constraint(g.constraint or "max_reply_chars")
    return int(v) if v is not None else None
