"""Semantic diff of two harnesses: what a reviewer needs to know, matched by stable key.

Elements are matched by their stable ``key``, never by name or position, so:

- a new name on the same key is one ``renamed`` event (old → new), never a remove + add;
- a change of order is one ``reordered`` event per moved element (with its old and new
  1-based positions and the key it now follows), not a change of content — an element pushed
  down because another one was inserted before it has not moved, and of the elements that keep
  their relative order, those still at their old position are the ones kept (swapping the first
  and last of three moves two, not the middle one);
- text edits (rules, prompt blocks, descriptions) carry a word-level diff;
- numeric and hook fields carry their old → new values;
- tool parameter changes are classed breaking or not (see :func:`compare_parameters`).

Every change has an *impact* and the diff suggests a version bump, the highest impact found:

- ``major`` — a skill or a tool was removed, or a tool's parameters changed in a breaking way
  (cases, scorers and callers refer to skills and tools by key, and a breaking parameter change
  makes yesterday's calls invalid);
- ``minor`` — anything added, any rename (a rename is a change of surface: a harness-aware model
  reads the new name from the harness it is given, and keys keep scoring stable), rule and
  prompt-block text, constraint values and ranges, hooks, guards, variables, a skill's tool
  list, a tool's backend or timeout, a non-breaking parameter change such as a new optional one;
- ``patch`` — wording of descriptions only, whitespace-only text edits, reorders.

>>> d = diff_harnesses(load_harness("v1_folder"), load_harness("v3_folder"))   # doctest: +SKIP
>>> d.bump, [c.kind for c in d.changes][:2]                                     # doctest: +SKIP
('minor', ['added', 'renamed'])
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .model import Guard, Harness, Skill, Tool

ADDED = "added"
REMOVED = "removed"
RENAMED = "renamed"
REORDERED = "reordered"
CHANGED = "changed"
PARAMETERS_CHANGED = "parameters_changed"
KINDS = (ADDED, REMOVED, RENAMED, REORDERED, CHANGED, PARAMETERS_CHANGED)

PATCH, MINOR, MAJOR = "patch", "minor", "major"
_BUMP_RANK = {None: 0, PATCH: 1, MINOR: 2, MAJOR: 3}

#: Element kinds, in the order a reviewer reads them.
ELEMENTS = (
    "harness",
    "variable",
    "skill_loader",
    "prompt_block",
    "constraint",
    "skill",
    "rule",
    "tool",
    "hook",
    "guard",
)


@dataclass(frozen=True)
class WordSpan:
    """One span of a word-level diff: ``op`` is ``=`` (kept), ``-`` (deleted) or ``+`` (inserted)."""

    op: str
    text: str


@dataclass(frozen=True)
class ParameterChange:
    """One change inside a tool's ``parameters`` schema.

    ``parameter`` is a path: ``order_id``, ``address.zip`` for a nested property, ``items[]``
    for array items. ``kind`` says what changed (``added``, ``removed``, ``became_required``,
    ``became_optional``, ``type_changed``, ``type_widened``, ``enum_added``, ``enum_narrowed``,
    ``enum_widened``, ``enum_removed``, ``constraint_tightened``, ``constraint_loosened``,
    ``constraint_changed``, ``description_changed``, ``annotation_changed``, ``schema_changed``).
    """

    parameter: str
    kind: str
    breaking: bool
    from_: Any = None
    to: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.parameter,
            "kind": self.kind,
            "breaking": self.breaking,
            "from": self.from_,
            "to": self.to,
        }


@dataclass
class Change:
    """One semantic change between two harnesses.

    ``element`` is one of :data:`ELEMENTS`; ``key`` is the element's stable key (a rule's key
    within its skill, named by ``parent``; a hook's section such as ``retry``; a guard's type).
    ``field`` names the field of a ``changed`` event. For ``reordered``, ``from_``/``to`` are
    1-based positions and ``after`` is the key of the element it now follows (None: now first)
    — the positions can be equal when elements were also added or removed around it.
    """

    kind: str
    element: str
    key: str
    from_: Any = None
    to: Any = None
    field: str | None = None
    parent: str | None = None
    breaking: bool | None = None
    words: list[WordSpan] | None = None
    parameters: list[ParameterChange] | None = None
    impact: str = PATCH
    after: str | None = None

    @property
    def path(self) -> str:
        """``skill.rule`` style address, e.g. ``compliance.not_medicine`` for a rule."""
        return f"{self.parent}.{self.key}" if self.parent else self.key

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind,
            "element": self.element,
            "key": self.key,
            "from": self.from_,
            "to": self.to,
        }
        if self.field is not None:
            d["field"] = self.field
        if self.parent is not None:
            d["parent"] = self.parent
        if self.breaking is not None:
            d["breaking"] = self.breaking
        if self.words is not None:
            d["words"] = [{"op": w.op, "text": w.text} for w in self.words]
        if self.parameters is not None:
            d["parameters"] = [p.to_dict() for p in self.parameters]
        if self.kind == REORDERED and self.field is None:
            d["after"] = self.after
        d["impact"] = self.impact
        return d


@dataclass
class HarnessDiff:
    """Every change from harness ``from_label`` to ``to_label`` and the suggested bump."""

    from_label: str
    to_label: str
    name: str
    changes: list[Change] = field(default_factory=list)
    bump: str | None = None

    @property
    def equal(self) -> bool:
        return not self.changes

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape: ``{"from", "to", "changes": [...], "bump"}``."""
        return {
            "from": self.from_label,
            "to": self.to_label,
            "name": self.name,
            "changes": [c.to_dict() for c in self.changes],
            "bump": self.bump,
        }

    def counts(self) -> dict[str, dict[str, int]]:
        """Number of changes per element and kind, e.g. ``{"skill": {"added": 1}}``."""
        out: dict[str, Counter[str]] = defaultdict(Counter)
        for c in self.changes:
            out[c.element][c.kind] += 1
        return {e: dict(out[e]) for e in ELEMENTS if e in out}

    def summary(self, limit: int = 6) -> str:
        """One line for ``harnessctl log``, e.g. ``+skill flash_sale, tool order_status renamed check_order→track_order``."""
        phrases = summary_phrases(self.changes)
        if not phrases:
            return "no semantic change"
        if len(phrases) > limit:
            return ", ".join(phrases[:limit]) + f", … (+{len(phrases) - limit} more)"
        return ", ".join(phrases)


# -- the diff ----------------------------------------------------------------------------


def diff_harnesses(
    a: Harness, b: Harness, *, from_label: str | None = None, to_label: str | None = None
) -> HarnessDiff:
    """The semantic changes that turn harness ``a`` into harness ``b``.

    The ``version:`` field itself is not a change: it names the harness, it does not shape it.

    >>> d = diff_harnesses(old, new, from_label="v1", to_label="v3")   # doctest: +SKIP
    >>> d.to_dict()["bump"]                                            # doctest: +SKIP
    'minor'
    """
    changes: list[Change] = []
    changes += _harness_fields(a, b)
    changes += _variables(a.variables, b.variables)
    changes += _skill_loader(a, b)
    changes += _keyed(
        "prompt_block",
        a.prompt.blocks,
        b.prompt.blocks,
        lambda x, y: _text_field("prompt_block", x.key, "text", x.text, y.text),
        describe=lambda blk: blk.text,
    )
    changes += _constraints(a, b)
    changes += _keyed("skill", a.skills, b.skills, _skill_changes, describe=_describe_skill)
    changes += _keyed("tool", a.tools, b.tools, _tool_changes, describe=_describe_tool)
    changes += _hooks(a, b)
    for c in changes:
        c.impact = _impact(c)
    bump = max((c.impact for c in changes), key=_BUMP_RANK.__getitem__, default=None)
    return HarnessDiff(
        from_label=from_label or _label(a, "a"),
        to_label=to_label or _label(b, "b"),
        name=b.name or a.name,
        changes=changes,
        bump=bump,
    )


def _label(h: Harness, fallback: str) -> str:
    return h.version or h.root or h.name or fallback


def _harness_fields(a: Harness, b: Harness) -> list[Change]:
    out: list[Change] = []
    if a.name != b.name:
        out.append(Change(CHANGED, "harness", "harness", a.name, b.name, field="name"))
    if a.schema_version != b.schema_version:
        out.append(Change(CHANGED, "harness", "harness", a.schema_version, b.schema_version, field="schema_version"))
    out += _text_field("harness", "harness", "description", a.description, b.description)
    return out


def _variables(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    out = [Change(REMOVED, "variable", k, a[k], None) for k in a if k not in b]
    for k, v in b.items():
        if k not in a:
            out.append(Change(ADDED, "variable", k, None, v))
        elif a[k] != v:
            out.append(Change(CHANGED, "variable", k, a[k], v, field="value"))
    return out


def _skill_loader(a: Harness, b: Harness) -> list[Change]:
    la, lb = a.skill_loader, b.skill_loader
    out: list[Change] = []
    if la.name != lb.name:
        out.append(Change(RENAMED, "skill_loader", lb.key, la.name, lb.name))
    out += _text_field("skill_loader", lb.key, "description", la.description, lb.description)
    return out


def _constraints(a: Harness, b: Harness) -> list[Change]:
    ca, cb = a.prompt.constraints, b.prompt.constraints
    out = [Change(REMOVED, "constraint", k, _describe_constraint(c), None) for k, c in ca.items() if k not in cb]
    for k, c in cb.items():
        old = ca.get(k)
        if old is None:
            out.append(Change(ADDED, "constraint", k, None, _describe_constraint(c)))
            continue
        for f in ("value", "min", "max"):
            if getattr(old, f) != getattr(c, f):
                out.append(Change(CHANGED, "constraint", k, getattr(old, f), getattr(c, f), field=f))
        out += _text_field("constraint", k, "description", old.description, c.description)
    return out


def _skill_changes(a: Skill, b: Skill) -> list[Change]:
    out: list[Change] = []
    if a.name != b.name:
        out.append(Change(RENAMED, "skill", b.key, a.name, b.name))
    out += _text_field("skill", b.key, "description", a.description, b.description)
    out += _keyed(
        "rule",
        a.rules,
        b.rules,
        lambda x, y: _text_field("rule", x.key, "text", x.text, y.text, parent=b.key),
        describe=lambda r: r.text,
        parent=b.key,
    )
    if a.tools != b.tools:
        if set(a.tools) == set(b.tools):
            out.append(Change(REORDERED, "skill", b.key, list(a.tools), list(b.tools), field="tools"))
        else:
            out.append(Change(CHANGED, "skill", b.key, list(a.tools), list(b.tools), field="tools"))
    for f in ("files", "inert_files", "layout", "extra"):  # an imported skill's folder and source fields
        if getattr(a, f) != getattr(b, f):
            out.append(Change(CHANGED, "skill", b.key, getattr(a, f), getattr(b, f), field=f))
    return out


def _tool_changes(a: Tool, b: Tool) -> list[Change]:
    out: list[Change] = []
    if a.name != b.name:
        out.append(Change(RENAMED, "tool", b.key, a.name, b.name))
    out += _text_field("tool", b.key, "description", a.description, b.description)
    for f in ("backend", "timeout_s", "extra"):
        if getattr(a, f) != getattr(b, f):
            out.append(Change(CHANGED, "tool", b.key, getattr(a, f), getattr(b, f), field=f))
    params = compare_parameters(a.parameters, b.parameters)
    if params:
        out.append(
            Change(
                PARAMETERS_CHANGED,
                "tool",
                b.key,
                a.parameters,
                b.parameters,
                breaking=any(p.breaking for p in params),
                parameters=params,
            )
        )
    return out


def _hooks(a: Harness, b: Harness) -> list[Change]:
    out: list[Change] = []
    for section in ("retry", "message"):
        ha, hb = getattr(a.hooks, section), getattr(b.hooks, section)
        for f in fields(hb):
            va, vb = getattr(ha, f.name), getattr(hb, f.name)
            if va == vb:
                continue
            if isinstance(va, str) and isinstance(vb, str) and f.name.endswith("template"):
                out += _text_field("hook", section, f.name, va, vb)
            else:
                out.append(Change(CHANGED, "hook", section, va, vb, field=f.name))
    out += _keyed(
        "guard", _guard_items(a.hooks.guards), _guard_items(b.hooks.guards), _guard_changes, describe=_describe_guard
    )
    return out


@dataclass
class _KeyedGuard:
    """A guard has no key of its own: its type is its identity (``type#2`` for a second one)."""

    key: str
    guard: Guard


def _guard_items(guards: list[Guard]) -> list[_KeyedGuard]:
    seen: Counter[str] = Counter()
    items = []
    for g in guards:
        seen[g.type] += 1
        items.append(_KeyedGuard(g.type if seen[g.type] == 1 else f"{g.type}#{seen[g.type]}", g))
    return items


def _guard_changes(a: _KeyedGuard, b: _KeyedGuard) -> list[Change]:
    out = []
    for f in fields(b.guard):
        va, vb = getattr(a.guard, f.name), getattr(b.guard, f.name)
        if va != vb:
            out.append(Change(CHANGED, "guard", b.key, va, vb, field=f.name))
    return out


def _keyed(
    element: str,
    a: list[Any],
    b: list[Any],
    compare: Callable[[Any, Any], list[Change]],
    *,
    describe: Callable[[Any], Any],
    parent: str | None = None,
) -> list[Change]:
    """Removed, added, per-element and reorder changes of two lists of keyed elements."""
    by_key_a = {x.key: x for x in a}
    by_key_b = {x.key: x for x in b}
    out = [Change(REMOVED, element, x.key, describe(x), None, parent=parent) for x in a if x.key not in by_key_b]
    for y in b:
        x = by_key_a.get(y.key)
        if x is None:
            out.append(Change(ADDED, element, y.key, None, describe(y), parent=parent))
        else:
            out += compare(x, y)
    keys_a, keys_b = [x.key for x in a], [y.key for y in b]
    for key in moved_keys(keys_a, keys_b):
        i = keys_b.index(key)
        after = keys_b[i - 1] if i > 0 else None
        out.append(Change(REORDERED, element, key, keys_a.index(key) + 1, i + 1, parent=parent, after=after))
    return out


def moved_keys(before: list[str], after: list[str]) -> list[str]:
    """The keys that changed place: those outside a longest run kept in the same relative order.

    Insertions and removals do not move the others, and among equally long runs the one that
    keeps the most elements at their old position wins, so a swap reports the swapped ones:

    >>> moved_keys(["a", "b", "c", "d"], ["a", "x", "c", "b", "d"])
    ['b']
    >>> moved_keys(["a", "b", "c"], ["c", "b", "a"])
    ['c', 'a']
    """
    in_after = {k: i for i, k in enumerate(after)}
    common = [(i, k) for i, k in enumerate(before) if k in in_after]
    seq = [in_after[k] for _, k in common]
    same = [i == in_after[k] for i, k in common]
    kept = _longest_increasing(seq, same)
    moved = [k for n, (_, k) in enumerate(common) if n not in kept]
    return sorted(moved, key=in_after.__getitem__)


#: Above this many common elements, the tie-break by unchanged position is skipped (quadratic).
_TIE_BREAK_MAX = 2000


def _longest_increasing(seq: list[int], same: list[bool] | None = None) -> set[int]:
    """Indexes of one longest strictly increasing subsequence of ``seq``; among the longest,
    one with the most indexes ``i`` where ``same[i]`` (elements that did not change position)."""
    if same is not None and any(same) and len(seq) <= _TIE_BREAK_MAX:
        best: list[tuple[int, int]] = []  # (length, unchanged kept) of the best run ending at i
        prev = [-1] * len(seq)
        for i, v in enumerate(seq):
            score = (1, int(same[i]))
            for j in range(i):
                if seq[j] < v and (best[j][0] + 1, best[j][1] + same[i]) > score:
                    score = (best[j][0] + 1, best[j][1] + same[i])
                    prev[i] = j
            best.append(score)
        keep: set[int] = set()
        i = max(range(len(seq)), key=best.__getitem__) if seq else -1
        while i != -1:
            keep.add(i)
            i = prev[i]
        return keep
    tails: list[int] = []  # index into seq of the smallest tail of each run length
    tail_values: list[int] = []
    prev = [-1] * len(seq)
    for i, v in enumerate(seq):
        j = bisect.bisect_left(tail_values, v)
        if j == len(tail_values):
            tail_values.append(v)
            tails.append(i)
        else:
            tail_values[j] = v
            tails[j] = i
        prev[i] = tails[j - 1] if j > 0 else -1
    keep = set()
    i = tails[-1] if tails else -1
    while i != -1:
        keep.add(i)
        i = prev[i]
    return keep


def _text_field(element: str, key: str, name: str, a: str, b: str, parent: str | None = None) -> list[Change]:
    if a == b:
        return []
    return [Change(CHANGED, element, key, a, b, field=name, parent=parent, words=word_diff(a, b))]


_TOKEN_RE = re.compile(r"(\w+|[^\w\s])(\s*)")


def word_diff(a: str, b: str) -> list[WordSpan]:
    """A word-level diff of two texts as kept / deleted / inserted spans (difflib).

    Words and punctuation are compared; the whitespace after each travels with it, so a
    re-wrapped line is not a change. The kept and deleted spans rebuild the old text, the kept
    and inserted spans the new one, word for word (spacing may differ).

    >>> [(w.op, w.text) for w in word_diff("Avoid words like best.", "Avoid absolute words.")]
    [('=', 'Avoid '), ('+', 'absolute '), ('=', 'words '), ('-', 'like best'), ('=', '.')]
    """
    ta, tb = _tokens(a), _tokens(b)
    spans: list[WordSpan] = []

    def push(op: str, tokens: list[tuple[str, str]]) -> None:
        text = "".join(word + space for word, space in tokens)
        if not text:
            return
        if spans and spans[-1].op == op:
            spans[-1] = WordSpan(op, spans[-1].text + text)
        else:
            spans.append(WordSpan(op, text))

    matcher = difflib.SequenceMatcher(None, [w for w, _ in ta], [w for w, _ in tb], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            # A kept word keeps its space if either text had one, so that both texts can be
            # rebuilt word for word from the spans ("words[-like-]" would glue them).
            push("=", [(w, sa or sb) for (w, sa), (_, sb) in zip(ta[i1:i2], tb[j1:j2])])
        else:
            push("-", ta[i1:i2])
            push("+", tb[j1:j2])
    return spans


def _tokens(text: str) -> list[tuple[str, str]]:
    lead = text[: len(text) - len(text.lstrip())]
    tokens = [(m.group(1), " " if m.group(2) else "") for m in _TOKEN_RE.finditer(text)]
    return [("", lead)] + tokens if lead and tokens else tokens


def kept_ratio(spans: list[WordSpan]) -> float:
    """Share of the characters of the two texts that the word diff kept (1.0 = identical)."""
    kept = sum(len(s.text) for s in spans if s.op == "=")
    total = kept * 2 + sum(len(s.text) for s in spans if s.op != "=")
    return 1.0 if total == 0 else 2 * kept / total


# -- tool parameters ---------------------------------------------------------------------

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_RESTRICTIONS = ("pattern", "format", "const", "multipleOf")
_ANNOTATIONS = ("title", "default", "examples", "$comment")
_HANDLED = {
    "type",
    "enum",
    "description",
    "properties",
    "required",
    "items",
    *_LOWER_BOUNDS,
    *_UPPER_BOUNDS,
    *_RESTRICTIONS,
    *_ANNOTATIONS,
}


def compare_parameters(a: dict[str, Any], b: dict[str, Any]) -> list[ParameterChange]:
    """Changes between two tool ``parameters`` schemas, each classed breaking or not.

    Breaking (a call valid before may now fail, or a caller must now send more): a parameter
    removed, a required parameter added, an optional one made required, a type changed, an
    enum narrowed or introduced, a bound tightened, a pattern/format/const changed.
    Non-breaking: an optional parameter added, a required one made optional, an enum widened,
    a bound loosened, a description or other annotation changed.

    >>> [(p.parameter, p.kind, p.breaking) for p in compare_parameters(
    ...     {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    ...     {"type": "object", "properties": {"q": {"type": "integer"}, "n": {"type": "integer"}}, "required": ["q"]})]
    [('q', 'type_changed', True), ('n', 'added', False)]
    """
    return _schema_changes("", a or {}, b or {})


def _schema_changes(path: str, a: dict[str, Any], b: dict[str, Any]) -> list[ParameterChange]:
    if a == b:
        return []
    where = path or "(parameters)"
    out: list[ParameterChange] = []
    ta, tb = _types(a.get("type")), _types(b.get("type"))
    if ta != tb:
        widened = bool(ta) and (not tb or ta < tb)
        out.append(
            ParameterChange(
                where, "type_widened" if widened else "type_changed", not widened, a.get("type"), b.get("type")
            )
        )
    out += _enum_changes(where, a.get("enum"), b.get("enum"))
    if a.get("description") != b.get("description"):
        out.append(ParameterChange(where, "description_changed", False, a.get("description"), b.get("description")))
    for k in _LOWER_BOUNDS + _UPPER_BOUNDS:
        va, vb = a.get(k), b.get(k)
        if va == vb:
            continue
        lower = k in _LOWER_BOUNDS
        if va is None:
            tightened = True
        elif vb is None:
            tightened = False
        else:
            try:
                tightened = vb > va if lower else vb < va
            except TypeError:
                tightened = True
        out.append(
            ParameterChange(
                f"{where}:{k}", "constraint_tightened" if tightened else "constraint_loosened", tightened, va, vb
            )
        )
    for k in _RESTRICTIONS:
        va, vb = a.get(k), b.get(k)
        if va != vb:
            out.append(
                ParameterChange(
                    f"{where}:{k}",
                    "constraint_loosened" if vb is None else "constraint_changed",
                    vb is not None,
                    va,
                    vb,
                )
            )
    for k in _ANNOTATIONS:
        if a.get(k) != b.get(k):
            out.append(ParameterChange(f"{where}:{k}", "annotation_changed", False, a.get(k), b.get(k)))
    out += _properties_changes(path, a, b)
    ia, ib = a.get("items"), b.get("items")
    if isinstance(ia, dict) and isinstance(ib, dict):
        out += _schema_changes(f"{path}[]", ia, ib)
    elif ia != ib:
        out.append(ParameterChange(f"{path}[]", "schema_changed", True, ia, ib))
    # Anything else (additionalProperties, anyOf, ...): cannot prove it compatible, so breaking.
    for k in sorted((set(a) | set(b)) - _HANDLED):
        if a.get(k) != b.get(k):
            out.append(ParameterChange(f"{where}:{k}", "schema_changed", True, a.get(k), b.get(k)))
    return out


def _properties_changes(path: str, a: dict[str, Any], b: dict[str, Any]) -> list[ParameterChange]:
    pa, pb = a.get("properties") or {}, b.get("properties") or {}
    ra, rb = set(a.get("required") or []), set(b.get("required") or [])
    out: list[ParameterChange] = []
    for name in pa:
        child = f"{path}.{name}" if path else name
        if name not in pb:
            out.append(ParameterChange(child, "removed", True, _param_summary(pa[name], name in ra), None))
            continue
        if name in rb and name not in ra:
            out.append(ParameterChange(child, "became_required", True, False, True))
        elif name in ra and name not in rb:
            out.append(ParameterChange(child, "became_optional", False, True, False))
        if isinstance(pa[name], dict) and isinstance(pb[name], dict):
            out += _schema_changes(child, pa[name], pb[name])
    for name in pb:
        if name not in pa:
            child = f"{path}.{name}" if path else name
            out.append(ParameterChange(child, "added", name in rb, None, _param_summary(pb[name], name in rb)))
    return out


def _param_summary(schema: Any, required: bool) -> dict[str, Any]:
    s = schema if isinstance(schema, dict) else {}
    return {"type": s.get("type"), "required": required}


def _types(t: Any) -> frozenset[str]:
    if t is None:
        return frozenset()
    return frozenset([t] if isinstance(t, str) else [str(x) for x in t])


def _enum_changes(where: str, a: Any, b: Any) -> list[ParameterChange]:
    if a == b:
        return []
    if a is None:
        return [ParameterChange(where, "enum_added", True, None, b)]
    if b is None:
        return [ParameterChange(where, "enum_removed", False, a, None)]
    removed = [v for v in a if v not in b]
    if removed:
        return [ParameterChange(where, "enum_narrowed", True, a, b)]
    return [ParameterChange(where, "enum_widened", False, a, b)]


# -- impact and summaries ----------------------------------------------------------------

_WORDING_FIELDS = {"description"}


def _impact(c: Change) -> str:
    if c.kind == REMOVED and c.element in ("skill", "tool"):
        return MAJOR
    if c.kind == PARAMETERS_CHANGED:
        if c.breaking:
            return MAJOR
        only_wording = all(p.kind in ("description_changed", "annotation_changed") for p in c.parameters or [])
        return PATCH if only_wording else MINOR
    if c.kind in (ADDED, REMOVED, RENAMED):
        return MINOR
    if c.kind == REORDERED:
        return PATCH
    if c.field in _WORDING_FIELDS:
        return PATCH
    if c.words is not None and _squash(c.from_) == _squash(c.to):
        return PATCH  # whitespace only
    return MINOR


def _squash(text: Any) -> str:
    return " ".join(str(text).split())


def _describe_skill(s: Skill) -> dict[str, Any]:
    return {"name": s.name, "description": s.description, "rules": [r.key for r in s.rules], "tools": list(s.tools)}


def _describe_tool(t: Tool) -> dict[str, Any]:
    return {"name": t.name, "description": t.description, "backend": t.backend, "parameters": t.parameters}


def _describe_constraint(c: Any) -> dict[str, Any]:
    return {"value": c.value, "min": c.min, "max": c.max}


def _describe_guard(g: _KeyedGuard) -> dict[str, Any]:
    return {k: v for k, v in asdict(g.guard).items() if v not in (None, [], "")}


ELEMENT_WORDS = {
    "prompt_block": "block",
    "skill_loader": "skill loader",
    "variable": "variable",
    "constraint": "constraint",
    "harness": "harness",
    "skill": "skill",
    "rule": "rule",
    "tool": "tool",
    "hook": "hook",
    "guard": "guard",
}


def summary_phrases(changes: Iterable[Change]) -> list[str]:
    """Short phrases, one per change (rule rewordings grouped per skill), for one-line summaries."""
    phrases: list[str | list[str]] = []
    reworded: dict[str, list[str]] = {}  # skill key -> reworded rule keys (one phrase per skill)
    for c in sorted(changes, key=_summary_rank):
        word = ELEMENT_WORDS.get(c.element, c.element)
        if c.kind == ADDED:
            phrases.append(f"+{word} {c.path}")
        elif c.kind == REMOVED:
            phrases.append(f"-{word} {c.path}")
        elif c.kind == RENAMED:
            phrases.append(f"{word} {c.key} renamed {c.from_}→{c.to}")
        elif c.kind == REORDERED:
            if c.field == "tools":
                phrases.append(f"skill {c.key} tools reordered")
            else:
                where = f"after {c.after}" if c.after else "first"
                phrases.append(
                    f"{word} {c.path} moved {where}" if c.from_ == c.to else f"{word} {c.path} moved {c.from_}→{c.to}"
                )
        elif c.kind == PARAMETERS_CHANGED:
            phrases.append(f"tool {c.key} parameters changed" + (" (breaking)" if c.breaking else ""))
        elif c.element == "rule" and c.words is not None:
            if c.parent not in reworded:
                reworded[c.parent or ""] = []
                phrases.append(reworded[c.parent or ""])
            reworded[c.parent or ""].append(c.key)
        elif c.words is not None:
            phrases.append(f"{word} {c.path} reworded" if c.field == "text" else f"{word} {c.path} {c.field} reworded")
        elif c.element == "constraint":
            phrases.append(f"{c.key} {c.from_}→{c.to}" if c.field == "value" else f"{c.key} {c.field} {c.from_}→{c.to}")
        elif c.element == "skill" and c.field == "tools":
            plus = [f"+{t}" for t in c.to if t not in c.from_]
            minus = [f"-{t}" for t in c.from_ if t not in c.to]
            phrases.append(f"skill {c.key} tools " + " ".join(plus + minus))
        elif isinstance(c.from_, list) and isinstance(c.to, list):
            plus = len([v for v in c.to if v not in c.from_])
            minus = len([v for v in c.from_ if v not in c.to])
            counts = " ".join(x for x in (f"+{plus}" if plus else "", f"-{minus}" if minus else "") if x)
            phrases.append(f"{word} {c.key} {c.field} {counts or 'reordered'}")
        elif _short_value(c.from_) and _short_value(c.to):
            phrases.append(f"{word} {c.key} {c.field} {c.from_}→{c.to}")
        else:
            phrases.append(f"{word} {c.key} {c.field} changed")
    out = []
    for p in phrases:
        if isinstance(p, list):
            skill = next(k for k, v in reworded.items() if v is p)
            out.append(f"rule {skill}.{p[0]} reworded" if len(p) == 1 else f"{len(p)} rules of {skill} reworded")
        else:
            out.append(p)
    return out


def _summary_rank(c: Change) -> int:
    """Most telling first: skills and tools, then limits, then wording; reorders last."""
    if c.element in ("skill", "tool") and c.kind in (ADDED, REMOVED, RENAMED) or c.breaking:
        return 0
    if c.element == "constraint" or c.kind == PARAMETERS_CHANGED:
        return 1
    if c.kind == REORDERED or c.field in _WORDING_FIELDS:
        return 4
    if c.element in ("rule", "prompt_block", "skill"):
        return 2
    return 3


def _short_value(v: Any) -> bool:
    return isinstance(v, (int, float, str)) and len(str(v)) < 24
