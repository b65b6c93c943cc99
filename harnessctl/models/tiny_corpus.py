"""The corpus the tiny model's tokenizer is trained on: conversations with tools, rendered.

Two sources, both from the project's own material (nothing is downloaded):

- ``oracle``: episodes of the simulator's reference policy on generated cases, under the shipped
  harness and under copies whose tools and skills carry fresh pronounceable names (what HSA
  training will show the model). The simulator registers it (:func:`register_corpus_source`,
  from :mod:`harnessctl.sim.corpus`);
- ``harness``: conversations synthesised from a harness alone (its prompt, skills, tool specs and
  schemas), for a harness whose tools have no simulator backend.

:func:`build_corpus` prefers ``oracle`` and falls back to ``harness``. Every conversation is
rendered with the tiny chat template, so the tokenizer learns the exact text the model will read.

>>> convs, source = build_corpus(harness, n=8, seed=0)        # doctest: +SKIP
>>> source, sorted(convs[0])                                   # doctest: +SKIP
('oracle', ['messages', 'tools'])
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.harness import Harness, render_harness, render_skill
from harnessctl.models.plugins import load_entry_points
from harnessctl.models.syllables import pronounceable_name
from harnessctl.models.tiny_template import CHAT_TEMPLATE

Conversation = dict[str, Any]  # {"messages": [...OpenAI chat...], "tools": [...OpenAI tool specs...]}

#: Share of conversations that keep the harness's own names (the rest are renamed).
CANONICAL_SHARE = 0.3

#: ``source(harness, n=, seed=)`` -> conversations, by source name; the ``harness`` source is built in.
CorpusSource = Callable[..., Iterator[Conversation]]
_SOURCES: dict[str, CorpusSource] = {}


class CorpusUnavailable(HarnessctlError):
    """A corpus source cannot make conversations for this harness (e.g. the oracle, for a
    harness whose tools have no simulator backend)."""


def register_corpus_source(name: str, source: CorpusSource) -> None:
    """Register (or replace) a source of conversations; it raises :class:`CorpusUnavailable`
    when it cannot serve a harness."""
    _SOURCES[name] = source


def _source(name: str) -> CorpusSource:
    if name not in _SOURCES:
        load_entry_points()  # the modules that register sources (the simulator's oracle episodes)
    if name not in _SOURCES:
        raise CorpusUnavailable(f"no {name!r} corpus source is registered")
    return _SOURCES[name]


def build_corpus(harness: Harness, *, n: int, seed: int, source: str = "auto") -> tuple[list[Conversation], str]:
    """``n`` conversations and the source they came from (``oracle`` or ``harness``).

    ``source="auto"`` uses oracle episodes when the simulator can run this harness and falls back
    to synthesised conversations otherwise.
    """
    if source in ("auto", "oracle"):
        try:
            return list(_source("oracle")(harness, n=n, seed=seed)), "oracle"
        except CorpusUnavailable:
            if source == "oracle":
                raise
    return list(harness_conversations(harness, n=n, seed=seed)), "harness"


def render_conversations(conversations: list[Conversation]) -> Iterator[str]:
    """Each conversation as the tiny chat template writes it."""
    from transformers.utils.chat_template_utils import render_jinja_template

    for conv in conversations:
        rendered, _ = render_jinja_template(
            [conv["messages"]], tools=conv["tools"] or None, chat_template=CHAT_TEMPLATE
        )
        yield rendered[0]


def renamed_harness(harness: Harness, rng: random.Random) -> Harness:
    """A copy whose tools, skills and skill loader carry fresh pronounceable names, in shuffled
    order (keys unchanged, so every reference in the prompt and the skills follows)."""
    h = harness.copy()
    used: set[str] = set()

    def fresh() -> str:
        while True:
            name = pronounceable_name(rng)
            if name not in used:
                used.add(name)
                return name

    for t in h.tools:
        t.name = fresh()
    for s in h.skills:
        s.name = fresh()
    h.skill_loader.name = fresh()
    rng.shuffle(h.tools)
    rng.shuffle(h.skills)
    return h


def surface_variant(harness: Harness, rng: random.Random) -> Harness:
    """The harness itself (``CANONICAL_SHARE`` of the time) or a renamed copy."""
    return harness if rng.random() < CANONICAL_SHARE else renamed_harness(harness, rng)


# -- conversations synthesised from a harness -------------------------------------------------

_OPENERS = ("", "hey ", "hi! ", "quick q: ", "pls ", "Mia, ", "hello, can you ", "umm ")
_REGIONS = ("north", "south", "east", "west", "central", "island")
_WORDS = ("serum", "hoodie", "earbuds", "kettle", "matcha", "sneakers", "lipstick", "blanket", "charger", "jacket")


def harness_conversations(harness: Harness, *, n: int, seed: int) -> Iterator[Conversation]:
    """Conversations built from the harness alone: a viewer asks for what a skill does, the
    assistant loads the skill, calls its tools with schema-valid arguments, and replies."""
    rng = random.Random(seed)
    for _ in range(n):
        h = surface_variant(harness, rng)
        rendered = render_harness(h)
        messages: list[dict[str, Any]] = [{"role": "system", "content": rendered.system_prompt}]
        skills = list(h.skills)
        for _turn in range(rng.randint(1, 3)):
            _exchange(h, rng.choice(skills) if skills else None, rng, messages)
        yield {"messages": messages, "tools": rendered.tools}


def _exchange(h: Harness, skill: Any, rng: random.Random, messages: list[dict[str, Any]]) -> None:
    product = f"P{rng.randint(1, 48):03d}"
    ask = skill.description if skill is not None else rng.choice(_WORDS)
    messages.append({"role": "user", "content": f"{rng.choice(_OPENERS)}{ask} for {product}?"})
    if skill is not None:
        _call(messages, h.skill_loader.name, {"name": skill.name}, render_skill(h, skill))
        tool_keys = [k for k in skill.tools if any(t.key == k for t in h.tools)]
        for key in rng.sample(tool_keys, k=min(len(tool_keys), rng.randint(0, 2))):
            tool = h.tool(key)
            args = _arguments(tool.parameters, product, rng)
            _call(messages, tool.name, args, json.dumps(_result(args, rng), ensure_ascii=False))
    price = f"${rng.randint(5, 199)}.{rng.choice(['00', '50', '90', '99'])}"
    reply = rng.choice(
        [
            f"It's {price} live right now, {rng.randint(2, 40)} left!",
            f"Great pick! {product} is {price} today.",
            "Let me check that with the team, one moment!",
            f"Ships in {rng.randint(1, 6)} days, returns within {rng.choice([7, 14, 30])} days.",
        ]
    )
    messages.append({"role": "assistant", "content": reply})


def _call(messages: list[dict[str, Any]], name: str, args: dict[str, Any], result: str) -> None:
    messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}],
        }
    )
    messages.append({"role": "tool", "name": name, "content": result})


def _arguments(schema: dict[str, Any], product: str, rng: random.Random) -> dict[str, Any]:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    args: dict[str, Any] = {}
    for name, spec in props.items():
        if name not in required and rng.random() < 0.6:
            continue
        args[name] = _value(name, spec or {}, product, rng)
    return args


def _value(name: str, spec: dict[str, Any], product: str, rng: random.Random) -> Any:
    if spec.get("enum"):
        return rng.choice(spec["enum"])
    kind = spec.get("type", "string")
    if kind in ("integer", "number"):
        return rng.randint(int(spec.get("minimum", 1)), int(spec.get("maximum", 10)))
    if kind == "boolean":
        return rng.random() < 0.5
    if "order" in name:
        return f"O{rng.randint(10000, 99999)}"
    if name.endswith("id"):
        return product
    if "region" in name:
        return rng.choice(_REGIONS)
    return rng.choice(_WORDS)


def _result(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    result: dict[str, Any] = {k: v for k, v in args.items()}
    result.update(
        price=f"{rng.randint(5, 199)}.{rng.choice(['00', '50', '90', '99'])}",
        stock=rng.randint(0, 60),
        days=rng.randint(1, 7),
    )
    return result
