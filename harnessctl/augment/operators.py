"""The HSA operators: seeded, composable, task-preserving transforms of an in-memory harness.

Each operator changes what the model *sees* (names, wording, order, numbers inside their valid
range, hook surfaces) and never what the task *is*: keys, backends, parameter names and JSON
types, tool lists of skills and guards stay as they are, so a case scores the same under any
variant. Every operator belongs to one of five families:

=============  ================================================================================
family         operators
=============  ================================================================================
skills         ``rewrite_skill_descriptions``, ``hide_skills``, ``rename_skills``, ``rename_skill_loader``
skill_content  ``paraphrase_rules``, ``hide_rules``, ``reorder_rules``
tools          ``rewrite_tool_descriptions``, ``rename_tools``
prompt         ``reorder_blocks``, ``perturb_constraints``
hooks          ``vary_retry``, ``vary_message``
=============  ================================================================================

A rename moves every reference with it: templates (``{{ tool.<key> }}``) follow by themselves,
literal mentions in any text are rewritten (:mod:`harnessctl.augment.references`).

Parameters are never renamed: cases state acceptable arguments by parameter name and the
backends take them as keyword arguments, so a renamed parameter would change the task (the
harness format has no parameter key to map a new name back). Parameter *descriptions* are
rewritten.

>>> from harnessctl.harness import load_harness
>>> h = load_harness("harnesses/livecommerce")                            # doctest: +SKIP
>>> v, records = apply_operators(h, ["rename_tools"], seed=1, ctx=OpContext(strength=1.0))  # doctest: +SKIP
>>> v.tool("order_status").name != h.tool("order_status").name            # doctest: +SKIP
True
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harnessctl.harness.model import Harness

from .paraphrase import LexiconParaphraser, Paraphraser
from .records import Change, OpRecord
from .references import iter_param_schemas, iter_text_slots, referenced_keys, rewrite_all_literal_names, surface_names
from .vocab import NAME_KINDS, NAME_RE, NAME_STYLES, NameMaker, check_split, vocabulary

#: Families in the order the pipeline applies them (paraphrase before renames, so a rename
#: also rewrites literal names a paraphrase kept).
FAMILIES: dict[str, tuple[str, ...]] = {
    "skill_content": ("paraphrase_rules", "hide_rules", "reorder_rules"),
    "skills": ("rewrite_skill_descriptions", "hide_skills", "rename_skills", "rename_skill_loader"),
    "tools": ("rewrite_tool_descriptions", "rename_tools"),
    "prompt": ("reorder_blocks", "perturb_constraints"),
    "hooks": ("vary_retry", "vary_message"),
}
#: Name kinds and their weights when an element is renamed.
NAME_KIND_WEIGHTS = {"realistic": 0.4, "verb_noun": 0.2, "random": 0.4}
#: Highest share of a harness's skills ``hide_skills`` hides (at strength 1).
MAX_HIDDEN_SKILL_SHARE = 0.4
#: Highest ``max_attempts`` ``vary_retry`` sets.
MAX_RETRY_ATTEMPTS = 4
_PROHIBITION_RE = re.compile(r"\b(never|do not|don't|must not|avoid|no)\b", re.IGNORECASE)


@dataclass
class OpContext:
    """What operators may use besides their seed.

    ``protected_skill_keys`` are skills the case needs; ``None`` means no case is known and
    ``hide_skills`` hides nothing (a variant written as a folder serves every case).
    ``constraint_floors`` are the lowest values that keep the task feasible (see
    :mod:`harnessctl.augment.feasibility`); ``retry_floor`` the fewest attempts the task needs
    (``None``: never below the source value).
    """

    split: str = "train"
    strength: float = 0.5
    paraphraser: Paraphraser = field(default_factory=LexiconParaphraser)
    protected_skill_keys: frozenset[str] | None = None
    constraint_floors: dict[str, float] = field(default_factory=dict)
    retry_floor: int | None = None
    keep_first_block: bool = True
    #: Skills other elements refer to, when the caller already knows them (see
    #: :func:`unhideable_skills`); saves recomputing them for every case of one variant.
    referenced_skill_keys: frozenset[str] | None = None

    def __post_init__(self) -> None:
        check_split(self.split)
        if not 0.0 <= self.strength <= 1.0:
            raise ValueError(f"strength must be within [0, 1], got {self.strength}: pass e.g. --strength 0.5")

    def describe(self) -> dict[str, Any]:
        return {"split": self.split, "strength": self.strength, "paraphraser": self.paraphraser.name}


OperatorFn = Callable[[Harness, OpContext, random.Random], tuple[dict[str, Any], list[Change]]]


@dataclass(frozen=True)
class Operator:
    """A named transform. ``fn`` mutates the harness it is given and returns (params, changes)."""

    name: str
    family: str
    fn: OperatorFn
    help: str


OPERATORS: dict[str, Operator] = {}


def operator(name: str, family: str) -> Callable[[OperatorFn], OperatorFn]:
    """Register an operator function under ``name`` in ``family``."""

    def wrap(fn: OperatorFn) -> OperatorFn:
        OPERATORS[name] = Operator(name, family, fn, (fn.__doc__ or "").strip().splitlines()[0])
        return fn

    return wrap


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across processes and Python versions).

    >>> derive_seed("train", 0, 3) == derive_seed("train", 0, 3) != derive_seed("heldout", 0, 3)
    True
    """
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def resolve_operators(ops: Iterable[str] | None) -> list[str]:
    """Family or operator names -> operator names in pipeline order (all when ``None``).

    >>> resolve_operators(["tools", "reorder_blocks"])
    ['rewrite_tool_descriptions', 'rename_tools', 'reorder_blocks']
    """
    wanted: set[str] = set()
    for item in ops if ops is not None else list(FAMILIES):
        item = item.strip()
        if not item:
            continue
        if item in FAMILIES:
            wanted.update(FAMILIES[item])
        elif item in OPERATORS:
            wanted.add(item)
        else:
            known = ", ".join([*FAMILIES, *OPERATORS])
            raise ValueError(f"unknown operator or family {item!r}: use one of {known}")
    return [name for names in FAMILIES.values() for name in names if name in wanted]


def apply_operator(h: Harness, name: str, *, seed: int, ctx: OpContext) -> tuple[Harness, OpRecord]:
    """Apply one operator to a copy of ``h``; the source is never modified.

    >>> v, rec = apply_operator(h, "reorder_blocks", seed=3, ctx=OpContext())   # doctest: +SKIP
    >>> rec.changes[0].field                                                    # doctest: +SKIP
    'order'
    """
    out = h.copy()
    return out, _run(out, name, seed, ctx)


def apply_operators(
    h: Harness, ops: Iterable[str] | None, *, seed: int, ctx: OpContext
) -> tuple[Harness, list[OpRecord]]:
    """Apply operators (names or families, see :func:`resolve_operators`) to one copy of ``h``.

    Each operator gets its own seed derived from ``seed`` and its name, so adding an operator
    to the list does not change what the others do.
    """
    out = h.copy()
    records = [_run(out, name, derive_seed(seed, name), ctx) for name in resolve_operators(ops)]
    return out, records


def _run(h: Harness, name: str, seed: int, ctx: OpContext) -> OpRecord:
    op = OPERATORS[name]
    params, changes = op.fn(h, ctx, random.Random(seed))
    return OpRecord(operator=name, family=op.family, seed=seed, params={**ctx.describe(), **params}, changes=changes)


# -- helpers ------------------------------------------------------------------------------------


def _pick(rng: random.Random, items: list[Any], share: float) -> list[Any]:
    """Each item with probability ``share``, at least one when ``share > 0`` and items exist."""
    rolls = [rng.random() for _ in items]
    picked = [x for x, r in zip(items, rolls) if r < share]
    if share > 0 and items and not picked:
        picked = [items[min(range(len(items)), key=rolls.__getitem__)]]
    return picked


def _protect(h: Harness) -> list[str]:
    return list(surface_names(h))


def _paraphrase(h: Harness, ctx: OpContext, rng: random.Random, text: str, kind: str) -> str:
    seed = rng.getrandbits(63)  # one draw per text: the paraphraser's use of randomness is its own
    return ctx.paraphraser.paraphrase(
        text,
        kind=kind,
        rng=random.Random(seed),
        split=ctx.split,
        strength=max(0.5, ctx.strength),
        protect=_protect(h),
    )


class _Namer:
    """New unique names for one harness: never a current name, never any name used before."""

    def __init__(self, h: Harness, ctx: OpContext, rng: random.Random):
        self.maker = NameMaker(vocabulary(ctx.split), avoid=prose_words(h))
        self.rng = rng
        self.taken = {n.lower() for n in surface_names(h)}
        # A variant keeps one style most of the time, like a real team's naming convention.
        self.style = rng.choice(NAME_STYLES) if rng.random() < 0.7 else None

    def new(self, old: str) -> tuple[str, str, str]:
        kinds, weights = zip(*NAME_KIND_WEIGHTS.items())
        for attempt in range(50):
            kind = self.rng.choices(kinds, weights)[0] if attempt < 40 else "random"
            style = self.style or self.rng.choice(NAME_STYLES)
            name = self.maker.make(old, kind, style, self.rng)
            if NAME_RE.match(name) and name.lower() not in self.taken:
                self.taken.add(name.lower())
                return name, kind, style
        raise RuntimeError(f"could not find a free name for {old!r}")  # 50 random tries: not reachable in practice


def prose_words(h: Harness) -> set[str]:
    """Lowercase words of every text of ``h`` (a random name avoids them)."""
    words: set[str] = set()
    for _where, get, _put in iter_text_slots(h):
        text = get()
        if isinstance(text, str):
            words.update(w.lower() for w in re.findall(r"[A-Za-z]+", text))
    return words


def _rename(h: Harness, mapping: dict[str, str]) -> list[str]:
    return rewrite_all_literal_names(h, mapping)


def _rename_elements(
    h: Harness, ctx: OpContext, rng: random.Random, elements: list[Any], element: str
) -> tuple[dict[str, Any], list[Change]]:
    """Give a strength-sized pick of ``elements`` (skills or tools) new names, and move every
    reference to each old name with it."""
    namer = _Namer(h, ctx, rng)
    changes, mapping, kinds = [], {}, {}
    for e in _pick(rng, elements, ctx.strength):
        new, kind, style = namer.new(e.name)
        mapping[e.name] = new
        kinds[e.key] = f"{kind}/{style}"
        changes.append(Change(f"{element}:{e.key}", "name", e.name, new))
        e.name = new
    moved = _rename(h, mapping)
    return {"kinds": kinds, "rewrote_literal": moved}, changes


# -- skills -------------------------------------------------------------------------------------


@operator("rename_skills", "skills")
def rename_skills(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Rename skills: synonyms, other naming styles, or pronounceable random identifiers."""
    return _rename_elements(h, ctx, rng, h.skills, "skill")


@operator("rename_skill_loader", "skills")
def rename_skill_loader(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Rename the skill-loading tool (its key stays ``load_skill``)."""
    roll = rng.random()
    if roll >= ctx.strength or not h.skills:
        return {}, []
    new, kind, style = _Namer(h, ctx, rng).new(h.skill_loader.name)
    old = h.skill_loader.name
    h.skill_loader.name = new
    moved = _rename(h, {old: new})
    return {"kinds": {"load_skill": f"{kind}/{style}"}, "rewrote_literal": moved}, [
        Change("skill_loader", "name", old, new)
    ]


@operator("rewrite_skill_descriptions", "skills")
def rewrite_skill_descriptions(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Paraphrase skill descriptions (what the skill catalog in the prompt shows)."""
    changes = []
    for s in _pick(rng, h.skills, ctx.strength):
        new = _paraphrase(h, ctx, rng, s.description, "description")
        if new != s.description:
            changes.append(Change(f"skill:{s.key}", "description", s.description, new))
            s.description = new
    return {}, changes


def unhideable_skills(h: Harness) -> set[str]:
    """Skill keys other elements refer to (a hidden one would leave a dangling reference)."""
    keys: set[str] = set()
    texts = [b.text for b in h.prompt.blocks]
    texts += [r.text for s in h.skills for r in s.rules] + [s.description for s in h.skills]
    texts += [t.description for t in h.tools] + [h.hooks.retry.feedback_template, h.skill_loader.description]
    for text in texts:
        keys |= {ref.split(":", 1)[1] for ref in referenced_keys(h, text) if ref.startswith("skill:")}
    return keys


@operator("hide_skills", "skills")
def hide_skills(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Hide a subset of the skills the case does not need (only when the case is known)."""
    order = [s.key for s in h.skills]
    rng.shuffle(order)  # the ranking depends on the seed only, not on the case
    count = int(round(rng.uniform(0, ctx.strength) * MAX_HIDDEN_SKILL_SHARE * len(h.skills)))
    if ctx.protected_skill_keys is None or count == 0:
        return {"count": 0}, []
    refs = ctx.referenced_skill_keys if ctx.referenced_skill_keys is not None else unhideable_skills(h)
    keep = set(ctx.protected_skill_keys) | refs
    hidden = [k for k in order if k not in keep][:count]
    if not hidden:
        return {"count": 0}, []
    before = [s.key for s in h.skills]
    h.skills = [s for s in h.skills if s.key not in hidden]
    return {"count": len(hidden), "protected": sorted(ctx.protected_skill_keys)}, [
        Change("skills", "hidden", before, [s.key for s in h.skills])
    ]


# -- skill content ------------------------------------------------------------------------------


@operator("paraphrase_rules", "skill_content")
def paraphrase_rules(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Paraphrase skill rules (templates, names and numbers are kept verbatim)."""
    changes = []
    rules = [(s, r) for s in h.skills for r in s.rules]
    for s, r in _pick(rng, rules, ctx.strength):
        new = _paraphrase(h, ctx, rng, r.text, "rule")
        if new != r.text:
            changes.append(Change(f"rule:{s.key}/{r.key}", "text", r.text, new))
            r.text = new
    return {}, changes


def is_essential_rule(h: Harness, text: str) -> bool:
    """A rule that must never be hidden: it names a tool, a skill or the skill loader (by template
    or literally), uses a constraint or variable template, or is a prohibition ("never", "do not",
    "avoid"...). Hiding such a rule would make the trajectory disagree with what the harness asks."""
    if referenced_keys(h, text):
        return True
    if "{{" in text:
        return True
    return bool(_PROHIBITION_RE.search(text))


@operator("hide_rules", "skill_content")
def hide_rules(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Hide some non-essential rules (see :func:`is_essential_rule`); every skill keeps one rule."""
    changes = []
    for s in h.skills:
        rolls = [rng.random() for _ in s.rules]
        hide = {
            r.key for r, roll in zip(s.rules, rolls) if roll < ctx.strength * 0.5 and not is_essential_rule(h, r.text)
        }
        if hide and len(hide) >= len(s.rules):
            hide.discard(s.rules[0].key)
        if hide:
            before = [r.key for r in s.rules]
            s.rules = [r for r in s.rules if r.key not in hide]
            changes.append(Change(f"skill:{s.key}", "rules", before, [r.key for r in s.rules]))
    return {}, changes


@operator("reorder_rules", "skill_content")
def reorder_rules(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Shuffle the order of a skill's rules."""
    changes = []
    for s in _pick(rng, [s for s in h.skills if len(s.rules) > 1], ctx.strength):
        before = [r.key for r in s.rules]
        for _ in range(10):
            rng.shuffle(s.rules)
            if [r.key for r in s.rules] != before:
                break
        changes.append(Change(f"skill:{s.key}", "rule_order", before, [r.key for r in s.rules]))
    return {}, changes


# -- tools --------------------------------------------------------------------------------------


@operator("rename_tools", "tools")
def rename_tools(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Rename tools (same key, backend and parameters)."""
    return _rename_elements(h, ctx, rng, h.tools, "tool")


@operator("rewrite_tool_descriptions", "tools")
def rewrite_tool_descriptions(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Paraphrase tool descriptions and parameter descriptions (names and types unchanged)."""
    changes = []
    for t in _pick(rng, h.tools, ctx.strength):
        new = _paraphrase(h, ctx, rng, t.description, "description")
        if new != t.description:
            changes.append(Change(f"tool:{t.key}", "description", t.description, new))
            t.description = new
        for path, schema in iter_param_schemas(t.parameters):
            text = schema.get("description")
            roll = rng.random()
            if not isinstance(text, str) or roll >= ctx.strength:
                continue
            new = _paraphrase(h, ctx, rng, text, "param")
            if new != text:
                changes.append(Change(f"tool:{t.key}", f"parameters.{path}.description", text, new))
                schema["description"] = new
    return {}, changes


# -- prompt -------------------------------------------------------------------------------------


@operator("reorder_blocks", "prompt")
def reorder_blocks(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Reorder the system prompt's instruction blocks (the first, the persona, stays first by default)."""
    blocks = h.prompt.blocks
    fixed = 1 if ctx.keep_first_block else 0
    movable = len(blocks) - fixed
    if movable < 2 or ctx.strength == 0:
        return {"keep_first": ctx.keep_first_block}, []
    before = [b.key for b in blocks]
    swaps = max(1, round(ctx.strength * (movable - 1)))
    for _ in range(20):
        for _ in range(swaps):
            i, j = rng.sample(range(fixed, len(blocks)), 2)
            blocks[i], blocks[j] = blocks[j], blocks[i]
        if [b.key for b in blocks] != before:
            break
    return {"keep_first": ctx.keep_first_block, "swaps": swaps}, [
        Change("blocks", "order", before, [b.key for b in blocks])
    ]


def constraint_range(h: Harness, key: str, ctx: OpContext) -> tuple[float, float]:
    """The range a constraint may take in a variant: its [min, max], raised to the feasibility floor."""
    c = h.prompt.constraints[key]
    lo = max(c.min, ctx.constraint_floors.get(key, c.min))
    return min(lo, c.max), c.max


@operator("perturb_constraints", "prompt")
def perturb_constraints(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Move numeric constraints inside their valid range, never below what the task needs."""
    changes, ranges = [], {}
    for c in _pick(rng, list(h.prompt.constraints.values()), ctx.strength):
        lo, hi = constraint_range(h, c.key, ctx)
        # Scale the reach by strength around the current value (clamped into the range).
        value = min(max(c.value, lo), hi)
        a = value - (value - lo) * ctx.strength
        b = value + (hi - value) * ctx.strength
        ranges[c.key] = [lo, hi]
        integral = isinstance(c.value, int) and isinstance(c.min, int) and isinstance(c.max, int)
        new: int | float = c.value
        for _ in range(10):
            x = rng.uniform(a, b)
            new = int(round(x)) if integral else round(x, 3)
            new = min(max(new, lo), hi)
            if new != c.value:
                break
        if integral:
            new = int(new)
        if new != c.value:
            changes.append(Change(f"constraint:{c.key}", "value", c.value, new))
            c.value = new
    return {"ranges": ranges}, changes


# -- hooks --------------------------------------------------------------------------------------


@operator("vary_retry", "hooks")
def vary_retry(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Vary the retry hook: number of attempts (never below what the task needs) and feedback wording."""
    retry, vocab, changes = h.hooks.retry, vocabulary(ctx.split), []
    floor = ctx.retry_floor if ctx.retry_floor is not None else retry.max_attempts
    floor = max(1, floor)
    roll_attempts, roll_feedback = rng.random(), rng.random()
    top = max(floor, min(MAX_RETRY_ATTEMPTS, retry.max_attempts + 2))
    attempts = rng.randint(floor, top)
    if roll_attempts < ctx.strength and attempts != retry.max_attempts:
        changes.append(Change("hooks.retry", "max_attempts", retry.max_attempts, attempts))
        retry.max_attempts = attempts
    elif retry.max_attempts < floor:  # the source itself cannot serve the case
        changes.append(Change("hooks.retry", "max_attempts", retry.max_attempts, floor))
        retry.max_attempts = floor
    template = vocab.feedback_templates[rng.randrange(len(vocab.feedback_templates))]
    if roll_feedback < ctx.strength and template != retry.feedback_template:
        changes.append(Change("hooks.retry", "feedback_template", retry.feedback_template, template))
        retry.feedback_template = template
    return {"attempts_range": [floor, top]}, changes


@operator("vary_message", "hooks")
def vary_message(h: Harness, ctx: OpContext, rng: random.Random) -> tuple[dict[str, Any], list[Change]]:
    """Vary message structure: tool-result format (json | text), result prefix, skill header."""
    msg, vocab, changes = h.hooks.message, vocabulary(ctx.split), []
    rolls = [rng.random() for _ in range(3)]
    prefix = vocab.result_prefixes[rng.randrange(len(vocab.result_prefixes))]
    header = vocab.skill_headers[rng.randrange(len(vocab.skill_headers))]
    if rolls[0] < ctx.strength / 2:
        fmt = "text" if msg.tool_result_format == "json" else "json"
        changes.append(Change("hooks.message", "tool_result_format", msg.tool_result_format, fmt))
        msg.tool_result_format = fmt
    if rolls[1] < ctx.strength and prefix != msg.tool_result_prefix:
        changes.append(Change("hooks.message", "tool_result_prefix", msg.tool_result_prefix, prefix))
        msg.tool_result_prefix = prefix
    if rolls[2] < ctx.strength and header != msg.skill_header:
        changes.append(Change("hooks.message", "skill_header", msg.skill_header, header))
        msg.skill_header = header
    return {}, changes


__all__ = [
    "FAMILIES",
    "MAX_HIDDEN_SKILL_SHARE",
    "NAME_KINDS",
    "OPERATORS",
    "OpContext",
    "Operator",
    "apply_operator",
    "apply_operators",
    "constraint_range",
    "derive_seed",
    "is_essential_rule",
    "resolve_operators",
    "unhideable_skills",
]
