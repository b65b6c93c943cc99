"""Stale names: a tool called, or a skill loaded, by a name the harness in front of the model does
not have but another version of it did.

This is what "a model fine-tuned under one harness falls on edits" looks like at episode level:
after the weekly edit renames the deals tool, the model still calls it by last week's name. The
runtime only knows the name is unknown; the diagnosis can say which element it meant and in which
version it was called that, which points at the fix (train on varied harnesses, or keep the old
name this week) instead of at the element's rules.

Former names come from the harness's git history (every version ``harnessctl log`` lists) and,
for an episode run under a derived harness (a held-out HSA variant, an older revision), from the
run's own harness. A name the episode's harness still uses is never stale.

>>> from harnessctl.harness import load_harness
>>> now = load_harness("harnesses/livecommerce")
>>> before = load_harness("harnesses/livecommerce")
>>> before.tool("promotions").name = "get_deals"
>>> former = former_names(now, [("v2", before)])
>>> former[("tool", "get_deals")].element, former[("tool", "get_deals")].current
('tool:promotions', 'get_promotions')
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.eval.runner import HarnessResolver
from harnessctl.harness.store import HarnessStore
from harnessctl.sim.scorer import LOADER_KEY

from .failures import FailureItem


@dataclass(frozen=True)
class FormerName:
    """A surface name another version of the harness used: what it named (``element``, e.g.
    ``tool:promotions``), whether it was a tool name or a skill name (``used_as``), the version
    it comes from (the latest one that had it) and the element's name in the episode's harness
    (``current``; None when the element is gone)."""

    name: str
    element: str
    used_as: str  # "tool" | "skill"
    version: str
    current: str | None = None


@dataclass(frozen=True)
class StaleCall:
    """One tool step of an episode that used a former name."""

    former: FormerName
    turn: int = 0


def surface_names(harness: Any) -> dict[tuple[str, str], str]:
    """(``"tool"`` or ``"skill"``, surface name) -> element, for every name a model can use.

    >>> from harnessctl.harness import load_harness
    >>> surface_names(load_harness("harnesses/livecommerce"))[("tool", "load_skill")]
    'skill_loader:load_skill'
    """
    out: dict[tuple[str, str], str] = {}
    for t in harness.tools:
        out[("tool", t.name)] = f"tool:{t.key}"
    loader = harness.skill_loader
    out[("tool", loader.name)] = f"skill_loader:{loader.key}"
    for s in harness.skills:
        out[("skill", s.name)] = f"skill:{s.key}"
    return out


def former_names(current: Any, earlier: Iterable[tuple[str, Any]]) -> dict[tuple[str, str], FormerName]:
    """The names of the ``earlier`` harnesses, as (version label, harness) pairs oldest first,
    that ``current`` no longer uses; a name used by several keeps the latest version.

    >>> former_names(now, [("v1", v1), ("v2", v2)])[("skill", "pricing")].version   # doctest: +SKIP
    'v2'
    """
    now = surface_names(current)
    name_now = {element: name for (_, name), element in now.items()}
    out: dict[tuple[str, str], FormerName] = {}
    for label, h in earlier:
        for (used_as, name), element in surface_names(h).items():
            if (used_as, name) in now:
                continue
            out[(used_as, name)] = FormerName(name, element, used_as, label, name_now.get(element))
    return out


def harness_history(harness_dir: str | Path | None) -> list[tuple[str, Any]]:
    """Every version of the harness at ``harness_dir`` in its git repository, oldest first, as
    (version name, harness); empty when the folder is not in git or has no versions. A version
    that no longer loads is left out (stale names are a hint, never a reason to fail).

    >>> [v for v, _ in harness_history("harnesses/livecommerce")]   # doctest: +SKIP
    ['v1', 'v2', 'v3']
    """
    if not harness_dir or not Path(harness_dir).is_dir():
        return []

    # Any failure reading the history (a broken repository, a version that no longer loads, a git
    # error) only means fewer former names: the diagnosis itself must never fail on a hint.
    try:
        store = HarnessStore(harness_dir)
        versions = store.list_versions()
    except Exception:  # noqa: BLE001 - see above
        return []
    out = []
    for v in versions:
        try:
            out.append((v.name, store.resolve(v.name).harness))
        except Exception:  # noqa: BLE001 - see above
            continue
    return out


def refused_names(record: dict[str, Any]) -> bool:
    """Whether the episode used a tool name its harness did not know or a skill name the loader
    refused: the only places a former name can show up, so the history is read only then.

    >>> refused_names({"tool_steps": [{"name": "get_deals", "key": None}]})
    True
    """
    return any(
        s.get("key") is None or (s.get("key") == LOADER_KEY and not s.get("valid"))
        for s in record.get("tool_steps") or []
    )


def stale_calls(record: dict[str, Any], former: dict[tuple[str, str], FormerName]) -> list[StaleCall]:
    """The tool steps of an episode record that used a former name: a tool name the harness did
    not know, or a skill name the skill loader refused.

    >>> f = {("tool", "get_deals"): FormerName("get_deals", "tool:promotions", "tool", "v3", "find_deals")}
    >>> [c.former.element for c in stale_calls({"tool_steps": [{"name": "get_deals", "key": None}]}, f)]
    ['tool:promotions']
    """
    out: list[StaleCall] = []
    if not former:
        return out
    for step in record.get("tool_steps") or []:
        if step.get("error") == "budget":
            continue  # never executed: a budget matter, not a name
        turn = int(step.get("turn") or 0)
        if step.get("key") is None:
            hit = former.get(("tool", str(step.get("name"))))
            if hit is not None:
                out.append(StaleCall(hit, turn))
        elif step.get("key") == LOADER_KEY and not step.get("valid"):
            args = step.get("arguments") or {}
            hit = former.get(("skill", str(args.get("name")))) if isinstance(args, dict) else None
            if hit is not None:
                out.append(StaleCall(hit, turn))
    return out


class FormerNameIndex:
    """Former names per suite case of a run, built lazily: the harness history is read, and a
    case's own harness (a variant, a revision) rebuilt, only when an episode used a name its
    harness did not know.

    >>> index = FormerNameIndex("harnesses/livecommerce", items, evals_dir="evals")      # doctest: +SKIP
    >>> index.for_case("variant", "var-0001")[("tool", "stock_check")].version  # doctest: +SKIP
    'v3'
    """

    def __init__(
        self,
        harness_path: str | Path | None,
        items: dict[tuple[str, str], Any] | None = None,
        evals_dir: str | Path | None = None,
    ):
        self.harness_path = Path(harness_path) if harness_path else None
        self.items = items or {}
        self.evals_dir = evals_dir  # a variant case's harness: its frozen file there, as the run loaded it
        self._history: list[tuple[str, Any]] | None = None
        self._resolver: Any = None  # one resolver: the run's harness is loaded once for every spec
        self._by_spec: dict[str, dict[tuple[str, str], FormerName]] = {}

    def for_case(self, suite: str, case_id: str) -> dict[tuple[str, str], FormerName]:
        """The former names for the episode of (suite, case id); empty when unknown."""
        if self.harness_path is None or not self.harness_path.is_dir():
            return {}
        item = self.items.get((suite, case_id))
        spec = getattr(item, "harness", None) or {}
        key = json.dumps(spec, sort_keys=True)
        if key not in self._by_spec:
            self._by_spec[key] = self._build(spec)
        return self._by_spec[key]

    def _build(self, spec: dict[str, Any]) -> dict[tuple[str, str], FormerName]:
        if self._history is None:
            self._history = harness_history(self.harness_path)
            self._resolver = HarnessResolver(self.harness_path, self.evals_dir)
        try:
            base = self._resolver.get(None)
            current = self._resolver.get(spec) if spec else base
        except Exception:  # noqa: BLE001 - a harness that cannot be rebuilt gives no hint, not a failure
            return {}
        earlier = list(self._history)
        if spec and spec.get("kind", "shipped") != "shipped":
            # The episode ran under a harness derived from the run's: the run's names are former ones.
            earlier.append((str(getattr(base, "version", None) or "the run's harness"), base))
        return former_names(current, earlier)


def relabel_stale(items: list[Any], calls: list[StaleCall]) -> list[Any]:
    """``items`` (a case's :class:`~harnessctl.loop.failures.FailureItem` list) with the failure
    each stale call caused — ``unknown_tool:<name>``, or ``invalid_args:load_skill`` for a skill
    name — replaced by a ``stale_name`` item on the element the name meant (same score component),
    and so is what the call stood for: ``missing_call`` of that tool, ``skipped_skill`` of that
    skill (the model did try, under the old name).

    >>> from harnessctl.loop.failures import FailureItem
    >>> f = FormerName("get_deals", "tool:promotions", "tool", "v3", "find_deals")
    >>> relabel_stale([FailureItem("unknown_tool", "tool_rationality", "tool:(unknown name)", "get_deals")],
    ...               [StaleCall(f)])[0].element
    'tool:promotions'
    """
    out = list(items)
    used: set[int] = set()
    for call in calls:
        f = call.former
        wanted = ("unknown_tool", f.name) if f.used_as == "tool" else ("invalid_args", LOADER_KEY)
        for i, item in enumerate(out):
            if i not in used and (item.kind, item.detail) == wanted:
                out[i] = FailureItem("stale_name", item.component, f.element, f.name)
                used.add(i)
                break
        # What the stale call stood for and the scorer then found missing: the model did try,
        # under the old name, so the cause is the name, not the rule or the skill's description.
        for i, item in enumerate(out):
            if i in used:
                continue
            missed_call = item.kind == "missing_call" and f.element == f"tool:{item.detail}"
            skipped = item.kind == "skipped_skill" and f.element == item.element
            if missed_call or skipped:
                out[i] = FailureItem("stale_name", item.component, f.element, f.name)
                used.add(i)
    return out


def summarize_stale(calls_by_case: dict[tuple[str, str], list[StaleCall]]) -> list[dict[str, Any]]:
    """One entry per former name used, most calls first: the name, what it named, the version it
    comes from, the element's name now, how many calls and cases used it."""
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    for case_key, calls in calls_by_case.items():
        for call in calls:
            f = call.former
            entry = agg.setdefault(
                (f.used_as, f.name),
                {
                    "name": f.name,
                    "used_as": f.used_as,
                    "element": f.element,
                    "version": f.version,
                    "current": f.current,
                    "calls": 0,
                    "cases": set(),
                },
            )
            entry["calls"] += 1
            entry["cases"].add(case_key)
    out = [{**e, "cases": len(e["cases"])} for e in agg.values()]
    out.sort(key=lambda e: (-e["calls"], -e["cases"], e["name"]))
    return out


def stale_name_use(results: list[Any], index: FormerNameIndex) -> dict[str, int]:
    """How much of a run leans on former names: episodes (``cases``) that used one and the calls
    that did (``calls``), of ``episodes`` — passed cases included. On the ``variant`` suite this
    says how far a model follows the harness it is shown rather than the one it was trained under.

    >>> stale_name_use(store.results(), FormerNameIndex("harnesses/livecommerce", items))   # doctest: +SKIP
    {'episodes': 40, 'cases': 12, 'calls': 77}
    """
    cases = calls = 0
    for r in results:
        record = r.record or {}
        if not refused_names(record):
            continue  # every name was known: nothing to look up
        found = stale_calls(record, index.for_case(r.suite, r.case_id))
        cases += bool(found)
        calls += len(found)
    return {"episodes": len(results), "cases": cases, "calls": calls}
