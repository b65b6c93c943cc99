"""Measures of model text the runtime, the guards and the scorer share: tokens and emoji.

Token counts here are an estimate that needs no tokenizer (words and punctuation marks), so
that a record scores the same whichever model produced it.

>>> count_tokens("It is $19.90, 3 left!")
10
>>> count_emojis("Hi ✨ welcome 👋🏻")
2
"""

from __future__ import annotations

import re

from harnessctl.models.toolcall_text import split_think

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# Pictographs, symbols and flags; skin-tone modifiers and joiners belong to the emoji before them.
_EMOJI_RE = re.compile(
    "(?:[\U0001f1e6-\U0001f1ff]{2})"
    "|(?:[\U0001f300-\U0001faff\u2600-\u27bf\u2b50\u2b55\u2934\u2935\u3030\u303d\u3297\u3299]"
    "[\U0001f3fb-\U0001f3ff\ufe0f]*"
    "(?:\u200d[\U0001f300-\U0001faff\u2600-\u27bf][\U0001f3fb-\U0001f3ff\ufe0f]*)*)"
)


def count_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text or ""))


def count_emojis(text: str) -> int:
    return len(_EMOJI_RE.findall(text or ""))


def think_tokens(content: str) -> int:
    """Tokens inside ``<think>`` blocks of one model turn."""
    reasoning, _ = split_think(content or "")
    return count_tokens(reasoning)


def visible_text(content: str) -> str:
    """The text outside ``<think>`` blocks (what a viewer would see)."""
    return split_think(content or "")[1]


__all__ = ["count_emojis", "count_tokens", "split_think", "think_tokens", "visible_text"]
