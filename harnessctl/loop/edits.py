"""Harness edits as plain data: a small patch language, applied to a copy and validated.

An edit is a list of operations on elements addressed by stable key:

- ``{"op": "set", "element": "skill", "key": "price_promo", "field": "description", "value": "..."}``
  — ``skill``/``tool`` ``name``/``description``; ``rule`` ``text`` (with ``parent``: the skill);
  ``prompt_block`` ``text``; ``constraint`` ``value``; ``hook`` ``retry``/``message`` fields
  (``max_attempts``, ``on``, ``backoff_s``, ...);
- ``{"op": "move", "element": "rule", "parent": "price_promo", "key": "check_deals", "to": 1}``
  — a rule within its skill or a prompt block, to a 1-based position.

:func:`apply_edit` applies the operations to a copy of the harness and returns it; a proposal is
only offered once :func:`check_proposal` has written it to a scratch folder with
:func:`~harnessctl.harness.save.save_harness` (schema, cross-file checks, round trip) and
computed its semantic diff, so an edit that would leave an invalid harness never reaches a person.

>>> p = Proposal("p1", "raise the retry limit", "faults outlast 2 attempts", ["hook:retry"],
...              [{"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": 3}])
>>> p.ops[0]["value"]
3
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.harness.diff import Change, HarnessDiff, WordSpan, diff_harnesses
from harnessctl.harness.errors import HarnessError
from harnessctl.harness.model import Harness
from harnessctl.harness.save import save_harness
from harnessctl.harness.yamlio import parse_yaml_data

#: Fields an edit may set, per element kind (everything else is refused).
SETTABLE = {
    "skill": ("name", "description"),
    "tool": ("name", "description", "timeout_s"),
    "rule": ("text",),
    "prompt_block": ("text",),
    "constraint": ("value",),
    "hook": (
        "max_attempts",
        "on",
        "backoff_s",
        "feedback_template",
        "tool_result_format",
        "tool_result_prefix",
        "skill_header",
    ),
    "skill_loader": ("name", "description"),
}
MOVABLE = ("rule", "prompt_block")


class EditError(HarnessctlError, ValueError):
    """An operation that does not apply to the harness (unknown key, field or position)."""


@dataclass
class Proposal:
    """One proposed harness edit: what it changes (``ops``), why (``rationale``), which failure
    clusters it targets (``targets``, element names) and where it came from (``source``: a rule's
    name or ``llm:<model>``). ``diff`` and ``issues`` are filled by :func:`check_proposal`."""

    id: str
    title: str
    rationale: str
    targets: list[str]
    ops: list[dict[str, Any]]
    source: str = "rules"
    impact: float = 0.0  # score lost by the failures it targets
    diff: dict[str, Any] | None = None
    issues: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.diff is not None and not self.issues

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proposal:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def read_patch(path: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """A patch file's title and operations. The file is YAML, read with the harness's own guarded
    reader (plain data only): a mapping with ``ops`` (a list of operations) and an optional
    ``title``. Raises :class:`EditError` naming the file (and the line of a YAML error).

    >>> read_patch("edits/week49.yaml")     # doctest: +SKIP
    ('week 49', [{'op': 'set', 'element': 'tool', 'key': 'promotions', 'field': 'name', 'value': 'find_deals'}])
    """
    p = Path(path)
    if not p.is_file():
        raise EditError(f"{p}: no such patch file; write one as YAML with a list under 'ops' (see docs/loop.md)")
    try:
        doc = parse_yaml_data(p.read_bytes(), str(p))
    except HarnessError as e:
        raise EditError(str(e)) from None
    ops = doc.get("ops")
    if not isinstance(ops, list) or not ops:
        raise EditError(f"{p}: 'ops' must be a non-empty list of operations (set, move)")
    return str(doc.get("title") or ""), [dict(op) if isinstance(op, dict) else op for op in ops]


def apply_edit(harness: Harness, ops: list[dict[str, Any]]) -> Harness:
    """A copy of ``harness`` with ``ops`` applied; raises :class:`EditError` naming the bad operation.

    >>> h2 = apply_edit(h, [{"op": "set", "element": "constraint", "key": "max_tool_calls", "field": "value", "value": 5}])  # doctest: +SKIP
    """
    out = harness.copy()
    for n, op in enumerate(ops, 1):
        if not isinstance(op, dict):
            raise EditError(f"operation {n}: not an object")
        kind = op.get("op")
        if kind == "set":
            _set(out, op, n)
        elif kind == "move":
            _move(out, op, n)
        else:
            raise EditError(f"operation {n}: unknown op {kind!r} (use set or move)")
    return out


def _set(h: Harness, op: dict[str, Any], n: int) -> None:
    element, key, fld = op.get("element"), op.get("key"), op.get("field")
    if element not in SETTABLE:
        raise EditError(f"operation {n}: element {element!r} cannot be edited (choose {', '.join(SETTABLE)})")
    if fld not in SETTABLE[element]:
        raise EditError(f"operation {n}: {element} field {fld!r} cannot be set (choose {', '.join(SETTABLE[element])})")
    if "value" not in op:
        raise EditError(f"operation {n}: no value")
    value = op["value"]
    target = _target(h, element, key, op.get("parent"), n, fld)
    if element == "constraint":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise EditError(f"operation {n}: constraint {key} value must be a number")
        if not target.min <= value <= target.max:
            raise EditError(
                f"operation {n}: constraint {key} value {value} is outside its range {target.min}..{target.max}"
            )
    setattr(target, fld, value)


def _target(h: Harness, element: str, key: Any, parent: Any, n: int, fld: str) -> Any:
    try:
        if element == "skill":
            return h.skill(str(key))
        if element == "tool":
            return h.tool(str(key))
        if element == "rule":
            skill = h.skill(str(parent))
            return next(r for r in skill.rules if r.key == key)
        if element == "prompt_block":
            return next(b for b in h.prompt.blocks if b.key == key)
        if element == "constraint":
            return h.prompt.constraints[str(key)]
        if element == "skill_loader":
            return h.skill_loader
        if element == "hook":
            section = getattr(h.hooks, str(key)) if key in ("retry", "message") else None
            if section is None or not hasattr(section, fld):
                raise EditError(f"operation {n}: hook {key!r} has no field {fld!r} (hooks: retry, message)")
            return section
    except (KeyError, StopIteration):
        where = f"{parent}.{key}" if parent else key
        raise EditError(f"operation {n}: no {element} with key {where!r}") from None
    raise EditError(f"operation {n}: element {element!r} cannot be edited")


def _move(h: Harness, op: dict[str, Any], n: int) -> None:
    element, key, to = op.get("element"), op.get("key"), op.get("to")
    if element not in MOVABLE:
        raise EditError(f"operation {n}: only {' and '.join(MOVABLE)} elements can be moved")
    if element == "rule":
        try:
            seq = h.skill(str(op.get("parent"))).rules
        except KeyError:
            raise EditError(f"operation {n}: no skill {op.get('parent')!r}") from None
    else:
        seq = h.prompt.blocks
    keys = [x.key for x in seq]
    if key not in keys:
        raise EditError(f"operation {n}: no {element} with key {key!r}")
    if not isinstance(to, int) or not 1 <= to <= len(seq):
        raise EditError(f"operation {n}: position must be 1..{len(seq)}, got {to!r}")
    item = seq.pop(keys.index(key))
    seq.insert(to - 1, item)


def check_proposal(proposal: Proposal, harness: Harness, harness_dir: str | Path) -> Proposal:
    """Apply ``proposal`` to ``harness`` in a scratch copy of ``harness_dir``, validate it and
    attach its semantic diff; an invalid one gets its ``issues`` instead. Returns the proposal.

    >>> check_proposal(p, load_harness("harnesses/livecommerce"), "harnesses/livecommerce").valid   # doctest: +SKIP
    True
    """
    try:
        candidate = apply_edit(harness, proposal.ops)
    except EditError as e:
        proposal.issues = [str(e)]
        proposal.diff = None
        return proposal
    try:
        with tempfile.TemporaryDirectory(prefix="harness-edit-") as tmp:
            write_candidate(candidate, Path(tmp) / "h", harness_dir)
    except HarnessError as e:
        proposal.issues = [str(i) for i in e.issues]
        proposal.diff = None
        return proposal
    d = diff_harnesses(harness, candidate, from_label="current", to_label=proposal.id)
    if d.equal:
        proposal.issues = ["the edit changes nothing"]
        proposal.diff = None
        return proposal
    proposal.diff = d.to_dict()
    proposal.issues = []
    return proposal


def write_candidate(candidate: Harness, folder: str | Path, base_dir: str | Path) -> Path:
    """Write ``candidate`` to ``folder`` keeping the comments and layout of ``base_dir``
    (validated; raises :class:`HarnessError` and writes nothing when invalid).

    >>> write_candidate(apply_edit(h, ops), "loops/l1/harness/c1", "harnesses/livecommerce")   # doctest: +SKIP
    """
    candidate = dataclasses.replace(candidate, root=None)
    return save_harness(candidate, folder, base=base_dir)


def proposal_diff(proposal: Proposal) -> HarnessDiff | None:
    """The proposal's semantic diff as a :class:`HarnessDiff` (for the rich diff view).

    >>> proposal_diff(p).summary()   # doctest: +SKIP
    """
    if proposal.diff is None:
        return None

    changes = []
    for c in proposal.diff["changes"]:
        words = [WordSpan(w["op"], w["text"]) for w in c["words"]] if c.get("words") is not None else None
        changes.append(
            Change(
                c["kind"],
                c["element"],
                c["key"],
                c.get("from"),
                c.get("to"),
                field=c.get("field"),
                parent=c.get("parent"),
                breaking=c.get("breaking"),
                words=words,
                impact=c.get("impact", "patch"),
                after=c.get("after"),
            )
        )
    d = proposal.diff
    return HarnessDiff(d["from"], d["to"], d["name"], changes, d["bump"])
