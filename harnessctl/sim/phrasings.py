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

A phrasing that shares half its words or more with a held-out message of its kind
(:func:`near_held_out`) is allowed — viewers do write alike — but the suites' held-out wording
then partly measures it: ``phrasings check`` counts these, and ``--strict`` (``strict=True``)
refuses them, for a measurement of wording the model never saw.

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
from harnessctl.harness.validate import _did_you_mean, _position, schema_issues
from harnessctl.harness.yamlio import parse_yaml

from .templates import TEMPLATES, templates_for

#: The largest phrasings file read (about 4,000 phrasings of 60 characters).
MAX_PHRASINGS_BYTES = 256 * 1024
#: A phrasing sharing at least this share of its words with a held-out message is a near copy.
NEAR_SHARE = 0.5
#: What a viewer asks in each message kind: the brief a writer (a person or a teacher model) gets.
KIND_DESCRIPTIONS: dict[str, str] = {
    "greeting": "says hello or that they just joined the stream",
    "product_info": "asks what the product on screen (or named) is, its details or features",
    "product_info_search": "asks about a product they name, which is not the one on screen",
    "price": "asks the price of the product",
    "promotion": "asks for coupons, discount codes or deals",
    "stock_variant": "asks whether one variant (a colour or a size) is still in stock",
    "stock": "asks whether the product is still in stock or how many are left, naming no variant",
    "size_advice": "gives their height in cm and asks which size to buy",
    "shipping_region": "asks the shipping time or fee to a place they name",
    "shipping": "asks the shipping time or cost in general, naming no place",
    "returns": "asks about returns, refunds or exchanges",
    "order_status": "asks where their order is, giving its order number",
    "order_status_no_number": "asks where their order is without giving an order number",
    "comparison": "asks to compare two products or which one is better",
    "compliance_sensitive": "asks a health claim: whether the product cures or treats a condition, is safe in pregnancy, is a medicine",
    "complaint_damaged": "complains that an order arrived damaged, broken, leaking, with items missing, or never came",
    "complaint": "complains about the service or an experience, with no order number and nothing damaged",
    "off_topic": "chats about something unrelated to shopping (weather, sport, music, personal questions to the host)",
    "human_request": "asks to talk to a real person or customer service",
    "flash_sale": "asks about the flash sale or countdown deal: when it ends, its price, how many are left",
}
#: What each placeholder stands for, for a writer.
PLACEHOLDER_MEANINGS: dict[str, str] = {
    "this": "a way of pointing at the product on screen (this, this one, it, or its name)",
    "name": "the product's name",
    "other": "the name of the second product of a comparison",
    "variant": "a variant's name (a colour or a size)",
    "height": "a height in cm (a number: write cm after it)",
    "region": "a region",
    "city": "a city",
    "order": "an order number",
    "condition": "a health condition such as eczema",
}
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


def message_key(text: str) -> str:
    """What makes two phrasings the same message: words and placeholders in order; case,
    punctuation, emoji and spacing aside.

    >>> message_key("Any update on {order}?? 📦") == message_key("any update on {order}")
    True
    """
    return " ".join(re.findall(r"[\w{}]+", text.casefold()))


@cache
def _held_out() -> dict[str, str]:
    return {message_key(t): k for k in TEMPLATES for t in templates_for(k, "eval")}


def _words(text: str) -> frozenset[str]:
    """A message's words, placeholders and case aside."""
    return frozenset(re.findall(r"[a-z0-9']+", re.sub(r"\{\w*\}", " ", text.casefold())))


@cache
def _held_out_words(kind: str) -> tuple[frozenset[str], ...]:
    return tuple(_words(t) for t in templates_for(kind, "eval"))


def near_held_out(kind: str, text: str, share: float = NEAR_SHARE) -> bool:
    """Whether ``text`` shares at least ``share`` of its words with one held-out message of ``kind``
    (a suite scoring it then partly measures training data; exact copies are refused outright).

    >>> near_held_out("price", "how much for it rn"), near_held_out("price", "what does {this} go for")
    (True, False)
    """
    words = _words(text)
    return bool(words) and any(len(words & held) >= share * len(words) for held in _held_out_words(kind))


def placeholder_rule(kind: str) -> str:
    """The placeholder rule of ``kind`` in words, as a writer's brief states it.

    >>> placeholder_rule("stock_variant")
    'it may use {this}, {variant}; every message must use {variant}'
    """
    allowed, required = kind_placeholders(kind)
    if not allowed:
        return "no placeholders"
    rule = "it may use " + ", ".join("{" + a + "}" for a in sorted(allowed))
    if required:
        rule += "; every message must use " + ", ".join("{" + r + "}" for r in sorted(required))
    if kind in _ONE_OF:
        rule += "; every message must use one of " + ", ".join("{" + p + "}" for p in _ONE_OF[kind])
    return rule


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
    seen = _held_out().get(message_key(text))
    if seen is not None:
        return f"is a held-out {seen} message of the suites; training on it would let them measure training data"
    if message_key(text) in {message_key(t) for t in templates_for(kind, "train")}:
        return f"is already a built-in {kind} training template"
    return None


def check_phrasings(
    phrasings: Mapping[str, Sequence[str]], rel: str = "phrasings", *, strict: bool = False
) -> list[Issue]:
    """Every problem in a kind -> phrasings mapping; positions where it is a round-trip document.
    ``strict`` also refuses near copies of held-out messages (:func:`near_held_out`).

    >>> [str(i) for i in check_phrasings({"prices": ["how much?"]}, "p.yaml")]
    ["p.yaml: unknown message kind 'prices' ($.phrasings.prices) — did you mean 'price'?"]
    """
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
            if problem is None and message_key(text) in seen:
                problem = f"repeats {kind}[{seen[message_key(text)]}]"
            seen.setdefault(message_key(text), i)
            if problem is None and strict and near_held_out(kind, text):
                problem = (
                    f"shares half its words or more with a held-out {kind} message of the suites "
                    "(refused with --strict, so that they measure wording the model never saw)"
                )
            if problem:
                line, col = _position(doc, ("phrasings", kind, i))
                issues.append(Issue(rel, f"{kind}[{i}] {problem}", line, col, f"$.phrasings.{kind}[{i}]"))
    return issues


def load_phrasings(path: str | Path, *, strict: bool = False) -> dict[str, list[str]]:
    """Read and check a phrasings file; raises :class:`HarnessError` listing every problem, each
    with its line (``strict``: near copies of held-out messages too).

    >>> load_phrasings("viewer-phrasings.yaml")["price"][:1]        # doctest: +SKIP
    ['hw much is {this} rn']
    """
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
    issues = check_phrasings(doc["phrasings"], rel, strict=strict)
    if issues:
        raise HarnessError(issues)
    return {str(k): [str(t) for t in v] for k, v in doc["phrasings"].items()}


def near_copies(phrasings: Mapping[str, Sequence[str]]) -> list[tuple[str, int]]:
    """``(kind, index)`` of every phrasing that is a near copy of a held-out message.

    >>> near_copies({"price": ["how much for it rn", "what does {this} go for"]})
    [('price', 0)]
    """
    return [(k, i) for k, texts in phrasings.items() for i, t in enumerate(texts) if near_held_out(k, t)]
