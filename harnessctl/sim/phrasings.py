"""Viewer phrasings a team adds to its training data: how its own viewers write, per kind.

The simulator words viewer messages from a few templates per message kind, half of them held
out for the suites (:mod:`harnessctl.sim.templates`). A model trained on the other half learns
those wordings; a team that knows how its viewers write — from chat logs, or from a teacher
model asked for paraphrases — adds phrasings in a YAML file::

    phrasings:
      price:
        - "hw much is {this} rn"
        - "{this} cost?"
      stock_variant:
        - "still got {variant}?"

``augment --trajectories N --phrasings FILE`` draws each training message from its kind's
built-in training templates and these together (tagged ``added_phrasing``). A phrasing is data,
checked before anything is built: a known kind; only the placeholders its kind's built-in
templates use, and those every one of them needs (``{variant}`` for ``stock_variant``, a place
for ``shipping_region``...), as plain ``{name}`` fields — no attributes, indexes or formats; not a
held-out template (that would put a suite message into training data) nor a repeat.

>>> check_phrasing("stock_variant", "still got {variant}?")
>>> check_phrasing("stock_variant", "still got it?")
'needs {variant} (every stock_variant message names it)'
>>> check_phrasing("price", "{this.__class__} price?")
'{this.__class__} is not a plain placeholder; write {this}'
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from harnessctl.harness.errors import HarnessError, Issue

from .templates import TEMPLATES, templates_for

#: The largest phrasings file read (about 4,000 phrasings of 60 characters).
MAX_PHRASINGS_BYTES = 256 * 1024
#: Kinds whose messages must name one of several places (the case reads it from either).
_ONE_OF: dict[str, tuple[str, ...]] = {"shipping_region": ("region", "city")}


def _fields(template: str) -> list[tuple[str, str, str | None]]:
    """(field, format spec, conversion) of each ``{...}`` in ``template``; raises ValueError on
    unbalanced braces."""
    return [(f, spec or "", conv) for _, f, spec, conv in string.Formatter().parse(template) if f is not None]


@cache
def kind_placeholders(kind: str) -> tuple[frozenset[str], frozenset[str]]:
    """(allowed, required) placeholders of a message kind, read from its built-in templates:
    any one of them uses is allowed, one every one of them uses is required.

    >>> sorted(kind_placeholders("comparison")[0]), sorted(kind_placeholders("comparison")[1])
    (['name', 'other', 'this'], ['other'])
    """
    sets = [{f for f, _, _ in _fields(t)} for t in TEMPLATES[kind]]
    return frozenset().union(*sets), frozenset(set.intersection(*sets))


def _normal(text: str) -> str:
    """What makes two phrasings the same message: words and placeholders in order; case,
    punctuation, emoji and spacing aside."""
    return " ".join(re.findall(r"[\w{}]+", text.casefold()))


@cache
def _held_out() -> dict[str, str]:
    return {_normal(t): k for k in TEMPLATES for t in templates_for(k, "eval")}


def check_phrasing(kind: str, text: str) -> str | None:
    """What is wrong with ``text`` as a phrasing of ``kind`` (None when it is usable)."""
    if kind not in TEMPLATES:
        return f"unknown message kind {kind!r}"
    if not text.strip():
        return "is empty"
    try:
        fields = _fields(text)
    except ValueError:
        return "has an unmatched { or }; write {{ or }} for a literal brace"
    allowed, required = kind_placeholders(kind)
    used = set()
    for field, spec, conv in fields:
        plain = re.match(r"\w*", field).group(0)
        if not field or field != plain or spec or conv:
            shown = "{" + field + ("!" + conv if conv else "") + (":" + spec if spec else "") + "}"
            return (
                f"{shown} is not a plain placeholder; write {{{plain}}}" if plain else f"{shown} is not a placeholder"
            )
        if field not in allowed:
            can = ", ".join("{" + a + "}" for a in sorted(allowed)) or "none"
            return f"{{{field}}} is not a placeholder of {kind} (it may use: {can})"
        used.add(field)
    for need in sorted(required - used):
        return f"needs {{{need}}} (every {kind} message names it)"
    places = _ONE_OF.get(kind)
    if places and not used & set(places):
        return f"needs one of {', '.join('{' + p + '}' for p in places)} (every {kind} message names the place)"
    seen = _held_out().get(_normal(text))
    if seen is not None:
        return f"is a held-out {seen} message of the suites; training on it would let them measure training data"
    if _normal(text) in {_normal(t) for t in templates_for(kind, "train")}:
        return f"is already a built-in {kind} training template"
    return None


def check_phrasings(phrasings: Mapping[str, Sequence[str]], rel: str = "phrasings") -> list[Issue]:
    """Every problem in a kind -> phrasings mapping; positions where it is a round-trip document.

    >>> [str(i) for i in check_phrasings({"prices": ["how much?"]}, "p.yaml")]
    ["p.yaml: unknown message kind 'prices' ($.phrasings.prices) — did you mean 'price'?"]
    """
    from harnessctl.harness.validate import _did_you_mean, _position

    issues = []
    doc = {"phrasings": phrasings}
    for kind, texts in phrasings.items():
        if kind not in TEMPLATES:
            line, col = _position(doc, ("phrasings", kind), key=True)
            hint = _did_you_mean(kind, TEMPLATES) or f"kinds: {', '.join(TEMPLATES)}"
            issues.append(Issue(rel, f"unknown message kind {kind!r}", line, col, f"$.phrasings.{kind}", hint))
            continue
        seen: dict[str, int] = {}
        for i, text in enumerate(texts):
            problem = check_phrasing(kind, text)
            if problem is None and _normal(text) in seen:
                problem = f"repeats {kind}[{seen[_normal(text)]}]"
            seen.setdefault(_normal(text), i)
            if problem:
                line, col = _position(doc, ("phrasings", kind, i))
                issues.append(Issue(rel, f"{kind}[{i}] {problem}", line, col, f"$.phrasings.{kind}[{i}]"))
    return issues


def load_phrasings(path: str | Path) -> dict[str, list[str]]:
    """Read and check a phrasings file; raises :class:`HarnessError` listing every problem, each
    with its line.

    >>> load_phrasings("viewer-phrasings.yaml")["price"][:1]        # doctest: +SKIP
    ['hw much is {this} rn']
    """
    from harnessctl.harness.validate import schema_issues
    from harnessctl.harness.yamlio import parse_yaml

    path = Path(path)
    rel = str(path)
    if not path.is_file():
        raise HarnessError(Issue(rel, "no such file", hint="pass a YAML file with a `phrasings:` mapping"))
    if path.stat().st_size > MAX_PHRASINGS_BYTES:
        raise HarnessError(Issue(rel, f"larger than {MAX_PHRASINGS_BYTES // 1024} KiB", hint="split it"))
    doc: Any = parse_yaml(path.read_bytes(), rel)
    issues = schema_issues(rel, doc, "phrasings")
    if issues:
        raise HarnessError(issues)
    issues = check_phrasings(doc["phrasings"], rel)
    if issues:
        raise HarnessError(issues)
    return {str(k): [str(t) for t in v] for k, v in doc["phrasings"].items()}
