"""The episode rubric: a pure function of (record, case) -> a breakdown in [0, 1] per component.

The same numbers are the eval score and, later, the RL reward components, so nothing here
reads anything but the record and the case (no harness, no catalog, no clock). Everything is
matched by stable key — tool keys, skill keys — so a renamed harness scores the same.

Components and weights. ``total`` is the weighted mean when the task components (correctness,
tool rationality, skill selection) are perfect; otherwise the conduct components (efficiency,
compliance, constraints, reasoning) count only in proportion to what of the task was done, so a
reply that does nothing scores 0, not 0.4 (see ``_total``):

===================  ======  ===============================================================
component            weight  what lowers it
===================  ======  ===============================================================
correctness          0.30    a required fact missing from the reply; a number, price or code
                             in the reply that no tool result, nor the viewer, gave
tool_rationality     0.20    a needed call not made (by key, with acceptable arguments);
                             unknown tools, invalid arguments, unreadable tool-call text;
                             unexpected, redundant or off-skill calls; giving up before the
                             retry hook's attempts are spent
skill_selection      0.10    the case's skill not loaded, another one loaded, or loaded late
efficiency           0.10    turns, calls and tokens beyond what the case needs
compliance           0.15    a forbidden claim (the whole component); a banned phrase
constraints          0.10    a reply over ``max_reply_chars``, too many emoji, the tool-call
                             or turn budget hit, a guard having to ask for a revision
reasoning            0.05    tokens inside ``<think>`` beyond ``max_think_tokens`` per turn
===================  ======  ===============================================================

``passed`` needs ``total >= PASS_THRESHOLD`` and no hard failure (an invented number, a
forbidden claim, no reply, a model error, or a constraint the model's own reply broke before a
guard repaired it: reply length, emoji, a banned phrase, a revision asked for, the tool-call
budget). Facts are read by meaning (:mod:`harnessctl.sim.meaning`), each in its clause with its
polarity: rewordings pass; a fact whose clause is negated, questioned, retracted or contradicted
(a leading "No" read against the viewer's question) fails, unless the fact itself is negative. Failed calls caused by the world (a timeout, an
upstream error) are never held against the model when it followed the retry hook; the facts
only that tool would have given are then excused.

>>> b = score_episode(record, case)                  # doctest: +SKIP
>>> b.total, b.failures                               # doctest: +SKIP
(0.85, ['hallucinated_number:$12.00'])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from harnessctl.runtime.record import EpisodeRecord, Termination, ToolStep
from harnessctl.runtime.text import count_emojis
from harnessctl.sim.case import Case, ExpectedCall
from harnessctl.sim.meaning import states
from harnessctl.sim.task import (
    FACT_RULES,
    PASS_THRESHOLD,
    SKILL_FALLBACKS,
    WORLD_ERRORS,
    fact_rule,
    retry_trigger,
)

WEIGHTS = {
    "correctness": 0.30,
    "tool_rationality": 0.20,
    "skill_selection": 0.10,
    "efficiency": 0.10,
    "compliance": 0.15,
    "constraints": 0.10,
    "reasoning": 0.05,
}
#: Components that say whether the task was done; the others say how well it was conducted.
TASK_COMPONENTS = ("correctness", "tool_rationality", "skill_selection")
#: Failures that fail the case whatever the total. The constraint ones bind the model's own
#: reply (before any guard repaired it) and its calls: a guard still protects the viewer, but a
#: reply that needed it does not pass.
HARD_FAILURES = (
    "hallucinated_number",
    "forbidden_claim",
    "no_reply",
    "model_error",
    "over_length",
    "too_many_emojis",
    "banned_phrase",
    "over_tool_budget",
    "guard_revise",
)
LOADER_KEY = "load_skill"
_MONEY_KEYS = ("price", "fee", "over", "spend", "amount", "cost", "total")


@dataclass
class ScoreBreakdown:
    correctness: float
    tool_rationality: float
    skill_selection: float
    efficiency: float
    compliance: float
    constraints: float
    reasoning: float
    total: float
    passed: bool
    failures: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def components(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in WEIGHTS}

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.components,
            "total": self.total,
            "passed": self.passed,
            "failures": list(self.failures),
            "details": dict(self.details),
        }


def _total(comps: dict[str, float]) -> float:
    """Weighted mean, with the conduct components counted in proportion to task achievement.

    ``total = task * (w_task + w_conduct * conduct)`` where ``task`` and ``conduct`` are the
    weighted means of their groups. When the task is fully done this is exactly the weighted
    mean of all components; when nothing of the task is done it is 0 — an empty or random reply
    is short, compliant and cheap, and must not earn points for that.
    """
    w_task = sum(WEIGHTS[k] for k in TASK_COMPONENTS)
    w_conduct = 1.0 - w_task
    task = sum(WEIGHTS[k] * comps[k] for k in TASK_COMPONENTS) / w_task
    conduct = sum(WEIGHTS[k] * v for k, v in comps.items() if k not in TASK_COMPONENTS) / w_conduct
    return task * (w_task + w_conduct * conduct)


def score_episode(record: EpisodeRecord, case: Case, *, threshold: float = PASS_THRESHOLD) -> ScoreBreakdown:
    """Score one episode against its case (see the module docstring for the rubric)."""
    failures: list[str] = []
    calls = _match_calls(record, case)
    correctness = _correctness(record, case, calls, failures)
    tool_rationality = _tool_rationality(record, case, calls, failures)
    skill_selection = _skill_selection(record, case, failures)
    efficiency = _efficiency(record, case, calls)
    compliance = _compliance(record, case, failures)
    constraints = _constraints(record, failures)
    reasoning = _reasoning(record, failures)
    if record.termination == Termination.MODEL_ERROR:
        failures.append("model_error")
    comps = {
        "correctness": correctness,
        "tool_rationality": tool_rationality,
        "skill_selection": skill_selection,
        "efficiency": efficiency,
        "compliance": compliance,
        "constraints": constraints,
        "reasoning": reasoning,
    }
    comps = {k: round(max(0.0, min(1.0, v)), 4) for k, v in comps.items()}
    total = round(_total(comps), 4)
    hard = any(f.split(":", 1)[0] in HARD_FAILURES for f in failures)
    return ScoreBreakdown(
        **comps,
        total=total,
        passed=total >= threshold and not hard,
        failures=failures,
        details={
            "calls": {f"{c.call.tool}#{i}": c.status for i, c in enumerate(calls)},
            "failure_entries": failure_entries(failures, case),
        },
    )


#: Failure kind -> (score component, element type, element key or None: the failure's own detail).
_FAILURE_MAP: dict[str, tuple[str, str, str | None]] = {
    "missing_fact": ("correctness", "tool", None),
    "hallucinated_number": ("correctness", "skill", None),
    "no_reply": ("correctness", "reply", None),
    "model_error": ("correctness", "model", None),
    "missing_call": ("tool_rationality", "tool", None),
    "gave_up_early": ("tool_rationality", "hook", "retry"),
    "retry_after_limit": ("tool_rationality", "hook", "retry"),
    "unknown_tool": ("tool_rationality", "tool", None),
    "invalid_args": ("tool_rationality", "tool", None),
    "redundant_call": ("tool_rationality", "tool", None),
    "unexpected_call": ("tool_rationality", "tool", None),
    "off_skill_call": ("tool_rationality", "tool", None),
    "malformed_tool_call": ("tool_rationality", "hook", "message"),
    "skipped_skill": ("skill_selection", "skill", None),
    "wrong_skill": ("skill_selection", "skill", None),
    "extra_skill": ("skill_selection", "skill", None),
    "late_skill": ("skill_selection", "skill", None),
    "forbidden_claim": ("compliance", "skill", None),
    "banned_phrase": ("compliance", "hook", "guards.banned_phrases"),
    "over_length": ("constraints", "constraint", "max_reply_chars"),
    "too_many_emojis": ("constraints", "constraint", "max_emojis"),
    "guard_revise": ("constraints", "hook", None),
    "over_tool_budget": ("constraints", "constraint", "max_tool_calls"),
    "budget_exhausted": ("constraints", "constraint", None),
    "over_think": ("reasoning", "constraint", "max_think_tokens"),
}
_BUDGET_CONSTRAINT = {"max_tool_calls": "max_tool_calls", "max_turns": "max_turns", "timeout": "case_timeout_s"}


def failure_entries(failures: list[str], case: Case) -> list[dict[str, Any]]:
    """The failures as plain entries ``{kind, component, element: {type, key}, detail, hard}``,
    naming the harness element each one involves (skill, tool, hook or constraint key), plus
    ``rule: {skill, key}`` — the skill rule that asked for a missing fact or forbade a claim —
    so failures can be grouped by kind, component, element and rule.

    >>> from harnessctl.sim.case import Expectation
    >>> c = Case(id="c", intent="price", query="?", expect=Expectation(skill="price_promo", facts=["$1.00"],
    ...          fact_sources={"$1.00": "product_details"}))
    >>> failure_entries(["missing_fact:$1.00", "over_length"], c)[1]
    {'kind': 'over_length', 'component': 'constraints', 'element': {'type': 'constraint', 'key': 'max_reply_chars'}, 'detail': None, 'hard': True}
    """
    skill = case.expect.skill
    sources = case.expect.fact_sources or {}
    out = []
    for f in failures:
        kind, _, detail = f.partition(":")
        component, etype, key = _FAILURE_MAP.get(kind, ("correctness", "reply", None))
        if key is None:
            if kind == "missing_fact":
                src = sources.get(detail)
                etype, key = ("tool", src.split("@")[0]) if src else ("skill", skill)
            elif kind in ("hallucinated_number", "forbidden_claim", "skipped_skill", "late_skill"):
                key = skill
            elif kind == "guard_revise":
                key = f"guards.{detail}"
            elif kind == "budget_exhausted":
                key = _BUDGET_CONSTRAINT.get(detail, detail)
            elif etype in ("tool", "skill"):
                key = detail or None
        entry = {
            "kind": kind,
            "component": component,
            "element": {"type": etype, "key": key},
            "detail": detail or None,
            "hard": kind in HARD_FAILURES,
        }
        # The skill rule that asked for the missing fact or forbade the claim, by key.
        rule = fact_rule(case.intent, detail) if kind == "missing_fact" else None
        if kind == "forbidden_claim":
            rule = FACT_RULES.get(case.intent, {}).get("forbidden")
        if rule and skill:
            entry["rule"] = {"skill": skill, "key": rule}
        out.append(entry)
    return out


# -- matching expected calls to what happened -------------------------------------------------


@dataclass
class _CallOutcome:
    call: ExpectedCall
    steps: list[ToolStep]
    status: str  # ok | failed | excused | gave_up | missing | optional
    world_failures: int


def _accepts(expected: dict[str, Any], actual: dict[str, Any] | None) -> bool:
    if actual is None:
        return False
    for k, want in expected.items():
        if k not in actual:
            return False
        options = want if isinstance(want, list) else [want]
        got = actual[k]
        if not any(_same(got, o) for o in options):
            return False
    return True


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return a == b


def _counted(record: EpisodeRecord) -> int:
    """Tool calls that used the budget (refused ones did not)."""
    return sum(1 for s in record.tool_steps if s.error != "budget")


def _match_calls(record: EpisodeRecord, case: Case) -> list[_CallOutcome]:
    retry_on = set(record.retry.get("on", ["tool_error", "timeout", "invalid_call"]))
    max_attempts = max(1, int(record.retry.get("max_attempts", 2)))
    max_calls = record.constraints.get("max_tool_calls")
    max_turns = record.constraints.get("max_turns")
    budget_spent = (max_calls is not None and _counted(record) >= max_calls) or (
        max_turns is not None and len(record.model_steps) >= max_turns
    )
    outcomes: list[_CallOutcome] = []
    for ec in case.expect.calls:
        steps = [s for s in record.tool_steps if s.key == ec.tool and s.valid and _accepts(ec.args, s.arguments)]
        world = sum(1 for s in steps if not s.ok and s.error in WORLD_ERRORS)
        if not ec.required:
            outcomes.append(_CallOutcome(ec, steps, "optional", world))
            continue
        if any(s.ok for s in steps):
            status = "ok"
        elif steps:
            last = steps[-1].error or ""
            retriable = retry_trigger(last) in retry_on and world < max_attempts
            status = "failed" if (not retriable or last == "retries_exhausted" or budget_spent) else "gave_up"
        else:
            status = "missing"
        outcomes.append(_CallOutcome(ec, steps, status, world))
    # A call that needed an earlier round's result is excused when that result never came;
    # so is a call the budgets left no room for, when the model spent them on needed calls.
    for o in outcomes:
        if o.status != "missing":
            continue
        earlier_failed = any(p.status == "failed" and p.call.round < o.call.round for p in outcomes)
        if earlier_failed or (budget_spent and not _wasted_steps(record, case)):
            o.status = "excused"
    return outcomes


def _wasted_steps(record: EpisodeRecord, case: Case) -> bool:
    for s in record.tool_steps:
        if s.key is None or not s.valid:
            return True
        if s.key != LOADER_KEY and not any(
            ec.tool == s.key and _accepts(ec.args, s.arguments) for ec in case.expect.calls
        ):
            return True
    return False


# -- components ------------------------------------------------------------------------------


def _correctness(record: EpisodeRecord, case: Case, calls: list[_CallOutcome], failures: list[str]) -> float:
    reply = record.reply or ""
    if not reply.strip():
        failures.append("no_reply")
        return 0.0
    did_its_part = all(c.status in ("ok", "failed", "excused", "optional") for c in calls)
    any_trouble = any(c.status in ("failed", "excused") for c in calls)
    sources = case.expect.fact_sources or {}

    def excused(fact: str) -> bool:
        """A missing fact is excused when the model did its part and the tool the fact
        comes from failed (as the world, not the model, made it fail)."""
        if not did_its_part:
            return False
        src = sources.get(fact)
        if src is None:
            return any_trouble and not sources
        key, _, pid = src.partition("@")
        mine = [c for c in calls if c.call.tool == key and (not pid or _same(c.call.args.get("product_id"), pid))]
        results = [s.result for c in mine for s in c.steps if s.ok]
        if any(_partial(r) for r in results):
            # The world cut the result short (a ``partial`` fault): what it left out is excused.
            return all(_partial(r) for r in results)
        if not any(c.status in ("failed", "excused") for c in mine):
            return False
        return not _fact_in(fact, results)

    names = _product_names(case)

    def said(fact: str) -> bool:
        """Stated by meaning, and of its own product where the fact belongs to one of several."""
        _, _, pid = sources.get(fact, "").partition("@")
        subject = names.get(pid) if pid else None
        others = list(names.values()) if subject else ()
        return states(fact, reply, subject=subject, others=others, question=case.query)

    groups: list[list[str]] = [[f] for f in case.expect.facts] + [list(g) for g in case.expect.any_facts if g]
    got = 0.0
    for group in groups:
        if any(said(f) for f in group) or all(excused(f) for f in group):
            got += 1
        else:
            failures.append(f"missing_fact:{group[0]}")
    facts_score = got / len(groups) if groups else 1.0
    invented = _invented_tokens(reply, record, case)
    failures += [f"hallucinated_number:{t}" for t in invented]
    return facts_score * max(0.0, 1.0 - 0.5 * len(invented))


def _product_names(case: Case) -> dict[str, str]:
    """Product id -> name, for the products the viewer can see (on screen and in the lineup)."""
    ctx = case.context
    names = {str(k): str(v) for k, v in (ctx.lineup or {}).items() if v}
    if ctx.product_id and ctx.product_name:
        names[str(ctx.product_id)] = str(ctx.product_name)
    return names


def _tool_rationality(record: EpisodeRecord, case: Case, calls: list[_CallOutcome], failures: list[str]) -> float:
    required = [c for c in calls if c.status != "optional"]
    covered = sum(1 for c in required if c.status in ("ok", "failed", "excused"))
    coverage = covered / len(required) if required else 1.0
    for c in required:
        if c.status == "missing":
            failures.append(f"missing_call:{c.call.tool}")
        elif c.status == "gave_up":
            failures.append(f"gave_up_early:{c.call.tool}")
    bad = 0
    allowed: set[str] | None = None
    if record.skills_loaded and record.skill_tools:
        allowed = set()
        for k in record.skills_loaded:
            allowed |= set(record.skill_tools.get(k, []))
    seen_ok: set[tuple[str, str]] = set()
    retry_on = set(record.retry.get("on", ["tool_error", "timeout", "invalid_call"]))
    failed_no_retry: set[tuple[str, str]] = set()
    for s in record.tool_steps:
        if s.error == "budget":
            continue  # a budget matter, scored under constraints
        if s.key is None:
            bad += 1
            failures.append(f"unknown_tool:{s.name}")
            continue
        if not s.valid:
            bad += 1
            failures.append(f"invalid_args:{s.key}")
            continue
        if s.key == LOADER_KEY:
            continue
        sig = (s.key, json.dumps(s.arguments, sort_keys=True, default=str))
        if s.error == "retries_exhausted":
            bad += 1
            failures.append(f"retry_after_limit:{s.key}")
            continue
        if sig in seen_ok or sig in failed_no_retry:
            bad += 1
            failures.append(f"redundant_call:{s.key}")
            continue
        if s.ok:
            seen_ok.add(sig)
        elif s.error not in retry_on:
            failed_no_retry.add(sig)
        if not any(ec.tool == s.key and _accepts(ec.args, s.arguments) for ec in case.expect.calls):
            bad += 1
            failures.append(f"unexpected_call:{s.key}")
        if allowed is not None and s.key not in allowed:
            bad += 1
            failures.append(f"off_skill_call:{s.key}")
    for step in record.model_steps:
        for _ in step.parse_errors:
            bad += 1
            failures.append("malformed_tool_call")
    return coverage * max(0.0, 1.0 - 0.25 * bad)


def _accepted_skills(record: EpisodeRecord, case: Case) -> tuple[set[str], bool]:
    """(skills that answer the case, whether the expected one exists in the harness)."""
    expected = case.expect.skill
    available = set(record.skill_tools)
    if expected is None:
        return set(), True
    if not available or expected in available:
        return {expected}, True
    fallback = set(SKILL_FALLBACKS.get(case.intent, [])) & available
    if not fallback:
        needed = {c.tool for c in case.expect.calls if c.required}
        fallback = {k for k, tools in record.skill_tools.items() if needed & set(tools)}
    return fallback, False


def _skill_selection(record: EpisodeRecord, case: Case, failures: list[str]) -> float:
    if case.expect.skill is None:
        return 1.0
    accepted, _ = _accepted_skills(record, case)
    loaded = list(dict.fromkeys(record.skills_loaded))
    if not loaded:
        failures.append("skipped_skill")
        return 0.0
    good = [k for k in loaded if k in accepted]
    if not good:
        failures.append(f"wrong_skill:{loaded[0]}")
        return 0.0
    score = 1.0
    extra = [k for k in loaded if k not in accepted]
    if extra:
        failures.append(f"extra_skill:{extra[0]}")
        score = 0.75
    first_load = min((s.turn for s in record.tool_steps if s.key == LOADER_KEY and s.ok), default=0)
    first_call = min((s.turn for s in record.tool_steps if s.key not in (None, LOADER_KEY) and s.valid), default=None)
    if first_call is not None and first_load > first_call:
        failures.append("late_skill")
        score *= 0.5
    return score


def _efficiency(record: EpisodeRecord, case: Case, calls: list[_CallOutcome]) -> float:
    required = [c for c in calls if c.status != "optional"]
    accepted, exists = _accepted_skills(record, case)
    skill_turn = 1 if case.expect.skill is not None else 0
    rounds: dict[int, int] = {}
    for c in required:
        if c.status == "excused":
            continue
        rounds[c.call.round] = max(rounds.get(c.call.round, 0), c.world_failures)
    min_turns = skill_turn + len(rounds) + sum(rounds.values()) + 1
    max_turns = record.constraints.get("max_turns")
    if max_turns:
        min_turns = min(min_turns, int(max_turns))
    turns = max(1, len(record.model_steps))
    turn_eff = min(1.0, min_turns / turns)

    loads = 0
    if case.expect.skill is not None:
        loads = 1 if exists else max(1, len(set(record.skills_loaded) & accepted))
    min_calls = loads + sum(1 + c.world_failures for c in required if c.status != "excused")
    made = sum(1 for s in record.tool_steps if s.key is not None and s.valid and s.error != "budget")
    call_eff = min(1.0, min_calls / made) if made else 1.0

    think = record.constraints.get("max_think_tokens") or 0
    allowance = sum(think + 64 for _ in record.model_steps) + 32
    used = sum(s.completion_tokens for s in record.model_steps)
    token_eff = min(1.0, allowance / used) if used else 1.0
    return (turn_eff + call_eff + token_eff) / 3


def _compliance(record: EpisodeRecord, case: Case, failures: list[str]) -> float:
    texts = [record.reply or "", record.raw_reply or ""]
    forbidden = [c for c in case.expect.forbidden if any(_says(t, c) for t in texts)]
    failures += [f"forbidden_claim:{c}" for c in forbidden]
    banned = {p for p in record.banned_phrases if any(p.lower() in t.lower() for t in texts)}
    for ev in record.guard_events:
        if ev.get("guard") == "banned_phrases":
            banned |= set(ev.get("phrases") or [])
    failures += [f"banned_phrase:{p}" for p in sorted(banned)]
    if forbidden:
        return 0.0
    return max(0.0, 1.0 - 0.5 * len(banned))


def _says(text: str, claim: str) -> bool:
    if not claim:
        return False
    return re.search(rf"(?<![\w]){re.escape(claim.lower())}(?![\w])", text.lower()) is not None


def _constraints(record: EpisodeRecord, failures: list[str]) -> float:
    penalty = 0.0
    raw = record.raw_reply or record.reply or ""
    limit = record.constraints.get("max_reply_chars")
    if limit is not None and len(raw) > limit:
        failures.append("over_length")
        penalty += 0.5
    max_emojis = record.constraints.get("max_emojis")
    if max_emojis is not None and count_emojis(raw) > max_emojis:
        failures.append("too_many_emojis")
        penalty += 0.25
    for ev in record.guard_events:
        if ev.get("action") == "revise":
            failures.append(f"guard_revise:{ev.get('guard')}")
            penalty += 0.25
    if any(s.error == "budget" for s in record.tool_steps):
        failures.append("over_tool_budget")
        penalty += 0.25
    if record.termination in (Termination.MAX_TOOL_CALLS, Termination.MAX_TURNS, Termination.TIMEOUT):
        failures.append(f"budget_exhausted:{record.termination.value}")
        penalty += 0.5
    return max(0.0, 1.0 - penalty)


def _reasoning(record: EpisodeRecord, failures: list[str]) -> float:
    budget = record.constraints.get("max_think_tokens")
    if budget is None or not record.model_steps:
        return 1.0
    scores = []
    worst = 0
    for s in record.model_steps:
        if s.think_tokens <= budget:
            scores.append(1.0)
        else:
            scores.append(budget / s.think_tokens if budget > 0 else 0.0)
            worst = max(worst, s.think_tokens)
    if worst:
        failures.append(f"over_think:{worst}")
    return sum(scores) / len(scores)


# -- grounding: numbers and codes must come from somewhere ------------------------------------

_CODE_RE = re.compile(r"(?<![\w@])(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{2,}(?![\w])")
_MONEY_RE = re.compile(r"\$\s?(\d+(?:[.,]\d+)?)")
_NUM_RE = re.compile(r"\d+(?:\.\d+)?")
_HANDLE_RE = re.compile(r"@[\w.]+")
_ORDINAL_RE = re.compile(r"(?<![A-Za-z])(\d+)(?:st|nd|rd|th|am|pm)\b", re.IGNORECASE)
_ISO_TIME_RE = re.compile(r"T(\d{2}):(\d{2})")


def _fact_in(fact: str, results: list[Any]) -> bool:
    """Whether ``fact`` could be written from ``results``: its numbers, amounts and codes all
    occur there (or, for a fact without any, its words do)."""
    if not results:
        return False
    numbers, money, words = set(), set(), set()
    flat: list[str] = []
    for r in results:
        _collect(r, "", numbers, money, words)
        flat.append(json.dumps(r, ensure_ascii=False, default=str).lower().replace("_", " "))
    codes = [c.upper() for c in _CODE_RE.findall(fact)]
    rest = _CODE_RE.sub(" ", fact)
    amounts = [float(m.replace(",", "")) for m in _MONEY_RE.findall(rest)]
    nums = [float(n) for n in _NUM_RE.findall(_MONEY_RE.sub(" ", rest))]
    if not (codes or amounts or nums):
        return any(fact.lower() in f for f in flat)
    return (
        all(c in words for c in codes)
        and all(any(abs(a - x) < 0.005 for x in money) for a in amounts)
        and all(any(abs(n - x) < 0.005 for x in numbers) for n in nums)
    )


def _partial(result: Any) -> bool:
    """A result a ``partial`` fault cut short (it names what is missing under ``incomplete``)."""
    return isinstance(result, dict) and bool(result.get("incomplete"))


def _invented_tokens(reply: str, record: EpisodeRecord, case: Case) -> list[str]:
    numbers, money, words = _grounding(record, case)
    text = _HANDLE_RE.sub(" ", reply)
    invented: list[str] = []
    # "17th", "9pm", "9:00 p.m.": a number with its reading, checked as the number.
    text = _ORDINAL_RE.sub(r"\1 ", text)
    for m in _CODE_RE.finditer(text):
        if m.group(0).upper() not in words:
            invented.append(m.group(0))
    text = _CODE_RE.sub(" ", text)
    for m in _MONEY_RE.finditer(text):
        v = float(m.group(1).replace(",", ""))
        if not any(abs(v - x) < 0.005 for x in money):
            invented.append(m.group(0).replace(" ", ""))
    text = _MONEY_RE.sub(" ", text)
    for m in _NUM_RE.finditer(text):
        v = float(m.group(0))
        if not any(abs(v - x) < 0.005 for x in numbers):
            invented.append(m.group(0))
    return invented


def _grounding(record: EpisodeRecord, case: Case) -> tuple[set[float], set[float], set[str]]:
    """Numbers, money amounts and alphanumeric words the model was given: tool results and
    the viewer's own message (query, earlier turns, what the overlay shows)."""
    numbers: set[float] = set()
    money: set[float] = set()
    words: set[str] = set()

    for s in record.tool_steps:
        if s.ok and s.key != LOADER_KEY:
            _collect(s.result, "", numbers, money, words)
    given = [case.query or ""]
    ctx = case.context
    given += [str(turn.get("content", "")) for turn in ctx.history or []]
    given += [str(v) for v in (ctx.viewer or {}).values()]
    given += [str(v) for v in (ctx.product_id, getattr(ctx, "product_name", None)) if v]
    given += [f"{pid} {name}" for pid, name in (getattr(ctx, "lineup", None) or {}).items()]
    for t in given:
        _collect(t, "", numbers, money, words)
    return numbers, money, words


def _collect(v: Any, key: str, numbers: set[float], money: set[float], words: set[str]) -> None:
    if isinstance(v, bool) or v is None:
        return
    if isinstance(v, (int, float)):
        numbers.add(float(v))
        if any(k in key.lower() for k in _MONEY_KEYS):
            money.add(float(v))
    elif isinstance(v, str):
        for n in _NUM_RE.findall(v):
            numbers.add(float(n))
        for h, _m in _ISO_TIME_RE.findall(v):
            numbers.add(float(int(h) % 12 or 12))  # "21:00" may be said "9pm"
        for m in _MONEY_RE.findall(v):
            money.add(float(m.replace(",", "")))
        for w in re.findall(r"[A-Za-z0-9]+", v):
            words.add(w.upper())
    elif isinstance(v, dict):
        for k, x in v.items():
            _collect(x, str(k), numbers, money, words)
    elif isinstance(v, list):
        # How many things a tool listed is a number it gave ("comes in 4 sizes").
        numbers.add(float(len(v)))
        for x in v:
            _collect(x, key, numbers, money, words)
