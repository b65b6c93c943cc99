"""The evolution suite: cases that exercise every element a harness edit changed, and no other.

Built from the semantic diff between the production harness and a candidate. For each changed
element, cases are drawn from the standard suites (deterministically, spread across intents)
among those whose expectation involves it:

==================  ===============================================================================
element             cases drawn
==================  ===============================================================================
tool                cases that need a call of the tool (by key): a rename, a reworded description, a
                    parameter change is then scored by the calls the model makes under it
skill               cases whose expected skill it is
rule                cases of the rule's skill, those that need the tool the rule names first
prompt_block        cases that use the tools or skills the block refers to; otherwise any cases
constraint          ``max_tool_calls``/``max_turns``: the cases that need the most calls or rounds;
                    other limits (reply length, emoji, think tokens) bind every reply: any cases
hook                ``retry``: cases with injected tool faults; ``message``: cases with tool calls
guard               ``banned_phrases``: cases with forbidden claims first; ``max_chars``: any cases
skill_loader        cases that load a skill
variable, harness   cases that use the blocks that refer to the variable; otherwise any cases
==================  ===============================================================================

Every case keeps its stable-key expectation, so it is scored under the candidate by the changed
rule itself: the records carry the constraints, banned phrases and retry hook in force. Each
evolution case is tagged ``evolution:<element>:<path>``. An element no case can exercise (a
tool or skill the suites have never asked for, a removed one) is listed under ``uncovered`` with
the reason.

>>> suite = build_evolution_suite(diff_harnesses(prod, cand), pool_items, per_element=3)   # doctest: +SKIP
>>> sorted(suite.coverage)                                                                   # doctest: +SKIP
['constraint:max_reply_chars', 'tool:promotions']
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from harnessctl.eval.suites import SuiteItem, sample
from harnessctl.harness.diff import ADDED, REMOVED, Change, HarnessDiff

SUITE = "evolution"
TAG = "evolution:"
_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z0-9_.]+)\s*\}\}")


@dataclass
class EvolutionSuite:
    """The suite's items, which cases cover which changed element, and what could not be covered."""

    items: list[SuiteItem]
    coverage: dict[str, list[str]] = field(default_factory=dict)  # element path -> case ids
    uncovered: dict[str, str] = field(default_factory=dict)  # element path -> why
    changes: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": len(self.items),
            "coverage": self.coverage,
            "uncovered": self.uncovered,
            "changes": self.changes,
        }


def element_path(c: Change) -> str:
    """``<element>:<key>``, with the parent for rules: ``rule:price_promo.check_deals``.

    >>> [element_path(c) for c in diff.changes][:1]   # doctest: +SKIP
    """
    return f"{c.element}:{c.path}"


def changed_elements(diff: HarnessDiff) -> dict[str, list[Change]]:
    """Element path -> its changes, in diff order.

    >>> list(changed_elements(diff))[:2]   # doctest: +SKIP
    """
    out: dict[str, list[Change]] = {}
    for c in diff.changes:
        out.setdefault(element_path(c), []).append(c)
    return out


def build_evolution_suite(
    diff: HarnessDiff, pool: list[SuiteItem], *, per_element: int = 3, harness: Any | None = None, seed: int = 0
) -> EvolutionSuite:
    """The evolution suite for ``diff`` drawn from ``pool`` (agent cases that run under the
    harness under evaluation); ``harness`` is the candidate, used to follow a prompt block's
    references to tools, skills and variables; ``seed`` picks which cases (see
    :func:`~harnessctl.eval.suites.sample`).

    >>> build_evolution_suite(diff, load_suite("livestream"), per_element=2).coverage   # doctest: +SKIP
    {'tool:promotions': ['evo-001-ls-price-51001-0012', 'evo-002-ls-flash_sale-51001-1003']}
    """
    pool = [i for i in pool if i.harness is None and hasattr(i.case, "expect")]
    suite = EvolutionSuite(items=[], changes=[c.to_dict() for c in diff.changes])
    n = 0
    for path, changes in changed_elements(diff).items():
        kinds = {c.kind for c in changes}
        if kinds == {REMOVED}:
            suite.uncovered[path] = "removed: the cases that expect it are retired with it"
            continue
        tiers, why = _select(changes[0], pool, harness)
        chosen = _pick(tiers, per_element, seed)
        if not chosen:
            suite.uncovered[path] = why or (
                "added: no suite case asks for it yet" if ADDED in kinds else "no suite case involves it"
            )
            continue
        ids = []
        for item in chosen:
            n += 1
            case = copy.deepcopy(item.case)
            case.id = f"evo-{n:03d}-{item.case.id}"
            case.suite = SUITE
            case.tags = list(case.tags) + [f"{TAG}{path}"]
            suite.items.append(SuiteItem(SUITE, case, None))
            ids.append(case.id)
        suite.coverage[path] = ids
    return suite


def _pick(tiers: list[list[SuiteItem]], n: int, seed: int = 0) -> list[SuiteItem]:
    """``n`` items, an evenly spread sample of the first tier, topped up from the next ones."""
    out: list[SuiteItem] = []
    for tier in tiers:
        out += sample(tier, n - len(out), seed)
        if len(out) >= n:
            break
    return out


def _needs_tool(item: SuiteItem, tool: str) -> bool:
    return any(c.tool == tool and c.required for c in item.case.expect.calls)


def _select(c: Change, pool: list[SuiteItem], harness: Any | None) -> tuple[list[list[SuiteItem]], str | None]:
    """Tiers of candidate cases for a change, the best-suited first, and why there are none."""
    e, key = c.element, c.key
    if e == "tool":
        return [[i for i in pool if _needs_tool(i, key)]], None
    if e == "skill":
        return [[i for i in pool if i.case.expect.skill == key]], None
    if e == "rule":
        of_skill = [i for i in pool if i.case.expect.skill == c.parent]
        tools = _rule_tools(harness, c.parent, key)
        first = [i for i in of_skill if any(_needs_tool(i, t) for t in tools)]
        return [first, [i for i in of_skill if i not in first]], None
    if e == "skill_loader":
        return [[i for i in pool if i.case.expect.skill]], None
    if e == "constraint":
        if key == "max_tool_calls":
            return _most(pool, lambda i: len([x for x in i.case.expect.calls if x.required])), None
        if key == "max_turns":
            return _most(pool, lambda i: max((x.round for x in i.case.expect.calls), default=0)), None
        return [list(pool)], None
    if e == "hook":
        if key == "retry":
            faulty = [i for i in pool if i.case.faults]
            return [faulty], None if faulty else "no suite case injects tool faults"
        return [[i for i in pool if i.case.expect.calls]], None
    if e == "guard":
        if key.startswith("banned_phrases"):
            forbidden = [i for i in pool if i.case.expect.forbidden]
            return [forbidden, [i for i in pool if not i.case.expect.forbidden]], None
        return [list(pool)], None
    if e == "prompt_block":
        return [
            _referring(
                pool, harness, [b.text for b in getattr(getattr(harness, "prompt", None), "blocks", []) if b.key == key]
            )
        ], None
    if e == "variable":
        texts = [
            b.text for b in getattr(getattr(harness, "prompt", None), "blocks", []) if key in _TEMPLATE.findall(b.text)
        ]
        return [_referring(pool, harness, texts)], None
    return [list(pool)], None  # harness name/description: any case


def _most(pool: list[SuiteItem], measure: Any) -> list[list[SuiteItem]]:
    if not pool:
        return [[]]
    top = max(measure(i) for i in pool)
    return [[i for i in pool if measure(i) == top], [i for i in pool if measure(i) != top]]


def _rule_tools(harness: Any | None, skill: str | None, rule: str) -> list[str]:
    if harness is None or skill is None:
        return []
    try:
        r = next(x for x in harness.skill(skill).rules if x.key == rule)
    except (KeyError, StopIteration):
        return []
    return [ref.split(".", 1)[1] for ref in _TEMPLATE.findall(r.text) if ref.startswith("tool.")]


def _referring(pool: list[SuiteItem], harness: Any | None, texts: list[str]) -> list[SuiteItem]:
    """Cases that use what the texts refer to (tools, skills, the skill loader); all cases when
    they refer to none of those."""
    refs = [r for t in texts for r in _TEMPLATE.findall(t)]
    tools = {r.split(".", 1)[1] for r in refs if r.startswith("tool.")}
    skills = {r.split(".", 1)[1] for r in refs if r.startswith("skill.")}
    loader = "skill_loader" in refs
    if not (tools or skills or loader):
        return list(pool)
    return [
        i
        for i in pool
        if any(_needs_tool(i, t) for t in tools) or i.case.expect.skill in skills or (loader and i.case.expect.skill)
    ]


def evolution_paths(item: SuiteItem) -> list[str]:
    """The changed elements an evolution case exercises (from its tags).

    >>> evolution_paths(suite.items[0])   # doctest: +SKIP
    """
    return [t[len(TAG) :] for t in item.case.tags if t.startswith(TAG)]
