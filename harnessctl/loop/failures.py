"""Failures of a run, each traced to a score component and a harness element.

A run's ``records.jsonl`` holds, per case, the scorer's ``failures``. Two shapes are read:

- structured: ``{"kind": "missing_call", "component": "tool_rationality", "element": "tool:promotions"}``
  (the element named by the scorer) — used as given;
- plain strings ``"kind:detail"`` (``"missing_call:promotions"``, ``"wrong_skill:compliance"``,
  ``"over_length"``) — the component comes from the rubric's table and the element is derived
  from the failure, the case's expectation (skill key, tool keys, which tool a fact comes from)
  and the episode record (retry hook, constraints, guards in force).

Elements are written ``<element kind>:<key>`` with the kinds of the semantic diff
(``skill:price_promo``, ``rule:price_promo.check_deals``, ``tool:promotions``,
``constraint:max_reply_chars``, ``hook:retry``, ``guard:banned_phrases``,
``prompt_block:grounding``, ``skill_loader:load_skill``); ``runtime`` marks failures no harness
element explains (a model error, a case that could not run).

>>> f = failure_items({"failures": ["missing_call:promotions"], "record": {}}, case=None)
>>> (f[0].kind, f[0].component, f[0].element)
('missing_call', 'tool_rationality', 'tool:promotions')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: Failure kind -> the score component it lowers (the scorer's rubric).
COMPONENT_OF = {
    "missing_fact": "correctness",
    "hallucinated_number": "correctness",
    "no_reply": "correctness",
    "missing_call": "tool_rationality",
    "gave_up_early": "tool_rationality",
    "unknown_tool": "tool_rationality",
    "invalid_args": "tool_rationality",
    "retry_after_limit": "tool_rationality",
    "redundant_call": "tool_rationality",
    "unexpected_call": "tool_rationality",
    "off_skill_call": "tool_rationality",
    "malformed_tool_call": "tool_rationality",
    "skipped_skill": "skill_selection",
    "wrong_skill": "skill_selection",
    "extra_skill": "skill_selection",
    "late_skill": "skill_selection",
    "forbidden_claim": "compliance",
    "banned_phrase": "compliance",
    "over_length": "constraints",
    "too_many_emojis": "constraints",
    "guard_revise": "constraints",
    "over_tool_budget": "constraints",
    "budget_exhausted": "constraints",
    "over_think": "reasoning",
    "stale_name": "tool_rationality",
    "model_error": "runtime",
    "error": "runtime",
}
RUNTIME = "runtime"
_TEMPLATE_TOOL = re.compile(r"\{\{\s*tool\.([A-Za-z0-9_]+)\s*\}\}")


@dataclass(frozen=True)
class FailureItem:
    """One failure of one case: what went wrong (``kind``), which score component it cost and
    which harness element is involved. ``detail`` is the failure's argument (a fact, a tool key,
    the skill loaded instead); ``other`` a second element it was confused with, if any."""

    kind: str
    component: str
    element: str
    detail: str = ""
    other: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "component": self.component, "element": self.element, "detail": self.detail}
        if self.other:
            d["other"] = self.other
        return d


@dataclass
class CaseFailures:
    """The failures of one failed case, with what a person needs to see it."""

    suite: str
    case_id: str
    score: float
    items: list[FailureItem] = field(default_factory=list)
    query: str = ""
    steps: list[str] = field(default_factory=list)
    reply: str = ""
    expected: dict[str, Any] = field(default_factory=dict)
    #: Tool keys whose calls still failed (a world error) when the retry hook's attempts ran out.
    gave_up: list[str] = field(default_factory=list)

    @property
    def lost(self) -> float:
        """Score points lost by this case, 0-1."""
        return max(0.0, 1.0 - self.score)


def failure_items(result: dict[str, Any], case: Any | None, harness: Any | None = None) -> list[FailureItem]:
    """The failures of one ``records.jsonl`` line, each with component and element.

    ``case`` is the suite's :class:`~harnessctl.sim.case.Case` (None when the suite file is not at
    hand: elements are then derived from the failure and the record alone); ``harness``, when
    given, lets a rule or prompt block stand for a failure it explains.

    >>> [i.element for i in failure_items({"failures": ["over_length"], "record": {}}, None)]
    ['constraint:max_reply_chars']
    """
    record = result.get("record") or {}
    out: list[FailureItem] = []
    for raw in result.get("failures") or []:
        if isinstance(raw, dict):
            kind = str(raw.get("kind") or "unknown")
            component = str(raw.get("component") or COMPONENT_OF.get(kind, "other"))
            element = raw.get("element")
            detail = str(raw.get("detail") or raw.get("arg") or "")
            if not element:
                element, other = _derive(kind, detail, record, case, harness)
            else:
                other = raw.get("other")
            out.append(FailureItem(kind, component, _element_name(element), detail, other))
            continue
        kind, _, detail = str(raw).partition(":")
        element, other = _derive(kind, detail, record, case, harness)
        out.append(FailureItem(kind, COMPONENT_OF.get(kind, "other"), element, detail, other))
    return out


def _element_name(element: Any) -> str:
    if isinstance(element, dict):  # {"kind": "tool", "key": "promotions"} or with a parent
        key = element.get("key", "?")
        parent = element.get("parent")
        return f"{element.get('kind', element.get('element', '?'))}:{parent + '.' if parent else ''}{key}"
    return str(element)


def _derive(
    kind: str, detail: str, record: dict[str, Any], case: Any | None, harness: Any | None
) -> tuple[str, str | None]:
    """(element, other element) of a plain failure string."""
    expected_skill = getattr(getattr(case, "expect", None), "skill", None)
    if kind in ("missing_call", "invalid_args", "redundant_call", "unexpected_call"):
        if kind == "missing_call":
            rule = _rule_calling(harness, expected_skill, detail)
            if rule:
                return rule, None
        return f"tool:{detail}", None
    if kind == "off_skill_call":
        return (f"skill:{expected_skill}" if expected_skill else f"tool:{detail}"), f"tool:{detail}"
    if kind == "unknown_tool":
        return "tool:(unknown name)", None
    if kind in ("gave_up_early", "retry_after_limit"):
        return "hook:retry", f"tool:{detail}" if detail else None
    if kind in ("skipped_skill", "late_skill"):
        return (f"skill:{expected_skill}" if expected_skill else "skill_loader:load_skill"), None
    if kind == "wrong_skill":
        return (f"skill:{expected_skill}" if expected_skill else f"skill:{detail}"), f"skill:{detail}"
    if kind == "extra_skill":
        return f"skill:{detail}", None
    if kind == "missing_fact":
        source = _fact_source(case, detail)
        if source:
            return f"tool:{source}", None
        return (f"skill:{expected_skill}" if expected_skill else "prompt_block:grounding"), None
    if kind == "hallucinated_number":
        return _block_or(
            harness, "grounding", f"skill:{expected_skill}" if expected_skill else "prompt_block:grounding"
        ), None
    if kind in ("forbidden_claim", "banned_phrase"):
        if kind == "banned_phrase" or record.get("banned_phrases"):
            return "guard:banned_phrases", None
        return (f"skill:{expected_skill}" if expected_skill else "prompt_block:compliance"), None
    if kind == "over_length":
        return "constraint:max_reply_chars", None
    if kind == "too_many_emojis":
        return "constraint:max_emojis", None
    if kind == "over_tool_budget":
        return "constraint:max_tool_calls", None
    if kind == "budget_exhausted":
        return ("constraint:max_tool_calls" if detail == "max_tool_calls" else "constraint:max_turns"), None
    if kind == "over_think":
        return "constraint:max_think_tokens", None
    if kind == "guard_revise":
        return f"guard:{detail or 'banned_phrases'}", None
    if kind == "malformed_tool_call":
        return "tool:(call format)", None
    return RUNTIME, None


def _fact_source(case: Any | None, fact: str) -> str | None:
    sources = getattr(getattr(case, "expect", None), "fact_sources", None) or {}
    source = sources.get(fact)
    return source.split("@", 1)[0] if source else None


def _rule_calling(harness: Any | None, skill_key: str | None, tool_key: str) -> str | None:
    """``rule:<skill>.<rule>`` of the expected skill's rule that tells the model to call the tool."""
    if harness is None or not skill_key:
        return None
    try:
        skill = harness.skill(skill_key)
    except KeyError:
        return None
    for rule in skill.rules:
        if tool_key in _TEMPLATE_TOOL.findall(rule.text):
            return f"rule:{skill.key}.{rule.key}"
    return None


def _block_or(harness: Any | None, block_key: str, fallback: str) -> str:
    if harness is not None and any(b.key == block_key for b in harness.prompt.blocks):
        return f"prompt_block:{block_key}"
    return fallback


def retries_exhausted(record: dict[str, Any]) -> list[str]:
    """Tool keys whose last call failed with a world error (tool error, timeout, empty result)
    after as many attempts as the retry hook allows: the faults outlasted the retries.

    >>> retries_exhausted({"retry": {"max_attempts": 2}, "tool_steps": [
    ...     {"key": "stock_check", "ok": False, "error": "timeout", "attempt": 1},
    ...     {"key": "stock_check", "ok": False, "error": "timeout", "attempt": 2}]})
    ['stock_check']
    """
    limit = int((record.get("retry") or {}).get("max_attempts", 2) or 2)
    last: dict[str, dict[str, Any]] = {}
    for step in record.get("tool_steps") or []:
        if step.get("key"):
            last[step["key"]] = step
    return sorted(
        k
        for k, s in last.items()
        if not s.get("ok")
        and s.get("error") in ("tool_error", "timeout", "empty_result")
        and int(s.get("attempt") or 1) >= limit
    )


def split_element(element: str) -> tuple[str, str | None, str]:
    """``(kind, parent, key)`` of an element name.

    >>> split_element("rule:price_promo.check_deals"), split_element("tool:promotions")
    (('rule', 'price_promo', 'check_deals'), ('tool', None, 'promotions'))
    """
    kind, _, key = element.partition(":")
    if kind == "rule" and "." in key:
        parent, _, key = key.partition(".")
        return kind, parent, key
    return kind, None, key
