"""Paraphrasers: rewrite a rule or a description without changing what it asks for.

Two implementations behind one small protocol:

- :class:`LexiconParaphraser` (the default) works offline and is deterministic: whole-word
  substitutions from the shipped phrase lexicon plus an optional frame around the sentence
  ("Important: ..."), drawn from one split's vocabulary;
- :class:`~harnessctl.augment.llm_paraphrase.LiteLLMParaphraser` asks a model through litellm
  (``--paraphraser litellm:<model>``), with an on-disk cache.

Both leave *protected spans* alone: ``{{ templates }}``, identifiers (anything with ``_``, ``-``
between letters, or a digit), numbers, prices, quoted text and the current surface names of the
harness. An LLM paraphrase that loses one of them is rejected and the offline paraphrase is used.

>>> import random
>>> p = LexiconParaphraser()
>>> out = p.paraphrase("Call {{ tool.stock_check }} and give the real number of units left.",
...                    kind="rule", rng=random.Random(3), split="train", strength=1.0)
>>> "{{ tool.stock_check }}" in out
True
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, runtime_checkable

from .vocab import Vocabulary, check_split, vocabulary

#: What a paraphrased text is: a skill rule, a skill/tool description, or a parameter description.
TEXT_KINDS = ("rule", "description", "param")

_PROTECTED_RE = re.compile(
    r"\{\{.*?\}\}"  # templates
    r"|\"[^\"\n]*\"|“[^”\n]*”"  # quoted text
    r"|<[^<>\s]+>"  # tags such as <think>
    r"|[$€£]?\d[\d.,:%]*"  # numbers, prices, times, percentages
    r"|\b[A-Za-z]+[_\-][A-Za-z0-9_\-]*[A-Za-z0-9]\b"  # identifiers with _ or -
    r"|\b[A-Za-z]*\d[A-Za-z0-9]*\b"  # identifiers with digits
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"  # camelCase identifiers
)
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"
_MARK_RE = re.compile(_MARK_OPEN + r"(\d+)" + _MARK_CLOSE)


@runtime_checkable
class Paraphraser(Protocol):
    """Rewrites one text of ``kind`` (see :data:`TEXT_KINDS`), using ``split``'s vocabulary."""

    name: str

    def paraphrase(
        self,
        text: str,
        *,
        kind: str,
        rng: random.Random,
        split: str,
        strength: float,
        protect: Iterable[str] = (),
    ) -> str: ...


def protected_spans(text: str, protect: Iterable[str] = ()) -> list[str]:
    """The spans of ``text`` a paraphrase must keep verbatim, in order.

    >>> protected_spans('Call {{ tool.x }} with id "P012", $19.90 max', protect=["load_skill"])
    ['{{ tool.x }}', '"P012"', '$19.90']
    """
    masked, spans = mask_protected(text, protect)
    return spans


def mask_protected(text: str, protect: Iterable[str] = ()) -> tuple[str, list[str]]:
    """Replace protected spans by private-use markers; returns the masked text and the spans."""
    spans: list[str] = []

    def keep(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"{_MARK_OPEN}{len(spans) - 1}{_MARK_CLOSE}"

    pattern = _protect_pattern(tuple(sorted({t for t in protect if t})))
    return pattern.sub(keep, text), spans


@lru_cache(maxsize=256)
def _protect_pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    if not terms:
        return _PROTECTED_RE
    names = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{names})(?![\w-])|" + _PROTECTED_RE.pattern)


def unmask(text: str, spans: list[str]) -> str:
    return _MARK_RE.sub(lambda m: spans[int(m.group(1))], text)


def keeps_protected(source: str, candidate: str, protect: Iterable[str] = ()) -> bool:
    """True when ``candidate`` still holds every protected span of ``source`` (as a multiset)."""
    protect = list(protect)
    need = Counter(protected_spans(source, protect))
    have = Counter(protected_spans(candidate, protect))
    return all(have[s] >= n for s, n in need.items())


@dataclass(frozen=True)
class _CompiledPhrases:
    regex: re.Pattern[str] | None
    by_match: dict[str, tuple[str, ...]]


def _compile(vocab: Vocabulary) -> _CompiledPhrases:
    cached = _COMPILED.get(vocab.split)
    if cached is not None:
        return cached
    parts, by_match = [], {}
    for e in sorted(vocab.phrases, key=lambda e: len(e.match), reverse=True):
        body = r"\s+".join(re.escape(w) for w in e.match.split())
        tail = rf"(?=\s*{_MARK_OPEN})" if e.before_ref else ""
        parts.append(rf"(?<![\w'-])(?P<p{len(parts)}>{body})(?![\w'-]){tail}")
        by_match[f"p{len(parts) - 1}"] = e.replacements
    regex = re.compile("|".join(parts), re.IGNORECASE) if parts else None
    compiled = _CompiledPhrases(regex, by_match)
    _COMPILED[vocab.split] = compiled
    return compiled


_COMPILED: dict[str, _CompiledPhrases] = {}


_NEW_OPEN, _NEW_CLOSE = "\ue002", "\ue003"
_ARTICLE_RE = re.compile(rf"\b([Aa])(n?)(\s+){_NEW_OPEN}(\w)")


def _fix_articles(text: str) -> str:
    """'a' / 'an' before a substituted word agrees with its first letter; markers are removed."""

    def fix(m: re.Match[str]) -> str:
        article = m.group(1) + ("n" if m.group(4).lower() in "aeiou" else "")
        return f"{article}{m.group(3)}{m.group(4)}"

    return _ARTICLE_RE.sub(fix, text).replace(_NEW_OPEN, "").replace(_NEW_CLOSE, "")


def _match_case(source: str, replacement: str) -> str:
    if source[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


class LexiconParaphraser:
    """The offline, deterministic paraphraser (shipped lexicon + frames of one split).

    ``strength`` is the chance that each substitution site changes; frames are added with
    probability ``strength / 2``. Same text, same rng state, same split -> same output.
    """

    name = "lexicon"

    def paraphrase(
        self,
        text: str,
        *,
        kind: str,
        rng: random.Random,
        split: str,
        strength: float,
        protect: Iterable[str] = (),
    ) -> str:
        if kind not in TEXT_KINDS:
            raise ValueError(f"unknown text kind {kind!r}: use one of {', '.join(TEXT_KINDS)}")
        vocab = vocabulary(check_split(split))
        masked, spans = mask_protected(text, protect)
        masked = self._substitute(masked, vocab, rng, strength)
        masked = self._frame(masked, kind, vocab, rng, strength)
        return unmask(masked, spans)

    def _substitute(self, masked: str, vocab: Vocabulary, rng: random.Random, strength: float) -> str:
        compiled = _compile(vocab)
        if compiled.regex is None:
            return masked

        def sub(m: re.Match[str]) -> str:
            group = m.lastgroup or ""
            options = compiled.by_match[group]
            # Draw both numbers every time so the stream does not depend on earlier choices.
            roll, pick = rng.random(), rng.randrange(len(options))
            if roll >= strength:
                return m.group(0)
            return _NEW_OPEN + _match_case(m.group(0), options[pick]) + _NEW_CLOSE

        return _fix_articles(compiled.regex.sub(sub, masked))

    def _frame(self, masked: str, kind: str, vocab: Vocabulary, rng: random.Random, strength: float) -> str:
        roll = rng.random()
        if kind == "param" or roll >= strength / 2:
            return masked
        if kind == "rule":
            frames = vocab.rule_frames
            frame = frames[rng.randrange(len(frames))]
            body = masked.strip()
            if frame.startswith("{s}"):
                return frame.replace("{s}", body if body.endswith((".", "!", "?")) else body + ".")
            return frame.replace("{s}", body)
        first = masked.split(" ", 1)[0].lower()
        if first not in vocab.description_verbs or not masked[:1].islower():
            return masked
        frames = vocab.description_frames
        return frames[rng.randrange(len(frames))].replace("{d}", masked.strip())
