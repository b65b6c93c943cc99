"""Propose harness edits from a diagnosis: offline rules, or an LLM through litellm.

Offline rules (each proposal names the failure clusters it targets):

- **confused pair** — the model loads skill B where skill A was expected, or calls tool Y where
  tool X was needed: sharpen both descriptions so each says what it is not for;
- **constraint most failures hit** — a runtime budget (``max_tool_calls``, ``max_turns``) that
  stops the episodes is raised to what the failing cases need, within its range; a business
  limit (reply length, emoji, think tokens) is never raised: the prompt block that states it
  moves to the top;
- **rule never followed** — a skill rule whose call is missed is reworded as an instruction
  to do first and moved to the top of its skill; a prompt block a failure traces to moves up;
- **retry gives up too early** — tool faults that outlast the retry hook's attempts (the case's
  faults clear one attempt later) raise ``max_attempts``, and a fault kind the hook does not
  react to is added to ``on``;
- **stale name** — the model keeps calling a tool, or loading a skill, by the name an earlier
  version gave it (the diagnosis's ``stale_name`` clusters): the element gets that name back, so
  the served model works this week while a model trained on varied harnesses is prepared.

Every proposal is checked (:func:`~harnessctl.loop.edits.check_proposal`) before it is offered.

>>> props = propose_rules(diagnosis, harness)          # doctest: +SKIP
>>> [p.title for p in props][:1]                       # doctest: +SKIP
['raise max_tool_calls from 1 to 4']
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.harness import load_harness
from harnessctl.harness.model import Harness
from harnessctl.models.base import GenerationSettings
from harnessctl.models.registry import resolve_model

from .diagnose import Diagnosis, diagnose_run
from .edits import Proposal, check_proposal
from .failures import split_element

#: Constraints that are runtime budgets (raising them changes no business rule).
BUDGETS = ("max_tool_calls", "max_turns")
_TEMPLATE_VAR = re.compile(r"\{\{\s*([A-Za-z0-9_.]+)\s*\}\}")
_NOT = re.compile(r"\s*\(not: [^)]*\)$")


@dataclass
class EditProposals:
    """What ``harnessctl edit`` offers for a run: its ``diagnosis`` under the current ``harness``,
    the checked ``proposals`` (numbered ``p1``, ``p2``, … in the order shown) and the LLM proposals
    that were ``rejected``."""

    diagnosis: Diagnosis
    harness: Harness
    proposals: list[Proposal] = field(default_factory=list)
    rejected: list[Proposal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.diagnosis.run_id,
            "proposals": [p.to_dict() for p in self.proposals],
            "rejected": [p.to_dict() for p in self.rejected],
        }


def propose_edits(
    run: str | Path,
    harness_dir: str | Path,
    *,
    runs_dir: str | Path = "runs",
    proposer: str | None = None,
    proposer_api_base: str | None = None,
    limit: int = 5,
) -> EditProposals:
    """Diagnose ``run`` under the harness in ``harness_dir`` and propose edits for its failures:
    the rules' (:func:`propose_rules`), after those of ``proposer`` (an LLM, :func:`propose_llm`)
    when one is named, ``limit`` at most, numbered ``p1``, ``p2``, ….

    >>> found = propose_edits("runs/failing", "harnesses/livecommerce")   # doctest: +SKIP
    >>> [(p.id, p.title) for p in found.proposals][:1]                    # doctest: +SKIP
    [('p1', 'raise max_tool_calls from 1 to 4')]
    """
    current = load_harness(harness_dir)
    d = diagnose_run(run, runs_dir=runs_dir, harness=current)
    proposals = propose_rules(d, current, harness_dir=harness_dir, limit=limit)
    rejected: list[Proposal] = []
    if proposer:
        valid, rejected = propose_llm(d, current, proposer, harness_dir=harness_dir, api_base=proposer_api_base)
        proposals = (valid + proposals)[:limit]
    for i, p in enumerate(proposals, 1):
        p.id = f"p{i}"
        if p.diff is not None:
            p.diff["to"] = p.id
    return EditProposals(d, current, proposals, rejected)


def propose_rules(
    diagnosis: Diagnosis, harness: Harness, *, harness_dir: str | Path | None = None, limit: int = 5
) -> list[Proposal]:
    """Rule-based proposals for ``diagnosis`` of a run under ``harness``, highest impact first.
    With ``harness_dir`` each is validated and the invalid ones are dropped.

    >>> [p.title for p in propose_rules(diagnosis, harness, harness_dir="harnesses/livecommerce")]   # doctest: +SKIP
    """
    proposals: list[Proposal] = []
    proposals += _confused_pairs(diagnosis, harness)
    proposals += _constraints(diagnosis, harness)
    proposals += _rules_and_blocks(diagnosis, harness)
    proposals += _retry(diagnosis, harness)
    proposals += _stale_names(diagnosis, harness)
    seen: set[str] = set()
    unique = []
    for p in sorted(proposals, key=lambda p: -p.impact):
        sig = json.dumps(p.ops, sort_keys=True)
        if sig in seen:
            continue
        seen.add(sig)
        unique.append(p)
    if harness_dir is not None:
        unique = [p for p in (check_proposal(p, harness, harness_dir) for p in unique) if p.valid]
    for i, p in enumerate(unique[:limit], 1):
        p.id = f"p{i}"
        if p.diff is not None:
            p.diff["to"] = p.id
    return unique[:limit]


def _impact(diagnosis: Diagnosis, elements: set[str]) -> float:
    """Score lost by the failed cases that have a failure on one of ``elements``."""
    return round(sum(cf.lost for cf in diagnosis.cases if any(i.element in elements for i in cf.items)), 4)


def _sharpened(description: str, other: str) -> str:
    base = _NOT.sub("", description).rstrip(" .;")
    return f"{base} (not: {_NOT.sub('', other).rstrip(' .;')})"


def _confused_pairs(diagnosis: Diagnosis, h: Harness) -> list[Proposal]:
    pairs: Counter[tuple[str, str, str]] = Counter()  # (element kind, expected key, confused key)
    for cf in diagnosis.cases:
        for i in cf.items:
            if i.kind == "wrong_skill" and i.other:
                a, b = split_element(i.element)[2], split_element(i.other)[2]
                if a != b:
                    pairs[("skill", a, b)] += 1
        missing = {i.detail for i in cf.items if i.kind == "missing_call"}
        extra = {i.detail for i in cf.items if i.kind in ("unexpected_call", "off_skill_call")}
        for x in missing:
            for y in extra:
                if x != y:
                    pairs[("tool", x, y)] += 1
    out = []
    for (kind, a, b), n in pairs.most_common():
        try:
            ea, eb = (h.skill(a), h.skill(b)) if kind == "skill" else (h.tool(a), h.tool(b))
        except KeyError:
            continue
        out.append(
            Proposal(
                id="",
                title=f"sharpen the descriptions of {kind}s {ea.name} and {eb.name}",
                rationale=f"in {n} failed case(s) the model used {kind} {b} ({eb.name}) where {a} ({ea.name}) was expected; "
                "each description now says what the other one is for",
                targets=[f"{kind}:{a}", f"{kind}:{b}"],
                ops=[
                    {
                        "op": "set",
                        "element": kind,
                        "key": a,
                        "field": "description",
                        "value": _sharpened(ea.description, eb.description),
                    },
                    {
                        "op": "set",
                        "element": kind,
                        "key": b,
                        "field": "description",
                        "value": _sharpened(eb.description, ea.description),
                    },
                ],
                source="rules:confused_pair",
                impact=_impact(diagnosis, {f"{kind}:{a}", f"{kind}:{b}"}),
            )
        )
    return out


def _constraints(diagnosis: Diagnosis, h: Harness) -> list[Proposal]:
    hit: Counter[str] = Counter()
    for cf in diagnosis.cases:
        for key in {split_element(i.element)[2] for i in cf.items if i.element.startswith("constraint:")}:
            hit[key] += 1
    out = []
    for key, n in hit.most_common():
        c = h.prompt.constraints.get(key)
        if c is None or n * 2 < max(1, diagnosis.n_failed):  # "most failures": at least half of the failed cases
            continue
        element = f"constraint:{key}"
        if key in BUDGETS:
            needed = _needed_budget(diagnosis, key, c.value)
            if needed <= c.value:
                continue
            out.append(
                Proposal(
                    id="",
                    title=f"raise {key} from {c.value:g} to {needed:g}",
                    rationale=f"{n} of {diagnosis.n_failed} failed cases ran out of the {key} budget; the calls they need fit in {needed:g} "
                    f"(range {c.min:g}..{c.max:g})",
                    targets=[element],
                    ops=[{"op": "set", "element": "constraint", "key": key, "field": "value", "value": needed}],
                    source="rules:constraint_budget",
                    impact=_impact(diagnosis, {element}),
                )
            )
            continue
        block = next((b for b in h.prompt.blocks if key in _TEMPLATE_VAR.findall(b.text)), None)
        if block is None or h.prompt.blocks.index(block) == 0:
            continue
        out.append(
            Proposal(
                id="",
                title=f"move prompt block {block.key} (states {key}) to the top",
                rationale=f"{n} of {diagnosis.n_failed} failed cases broke {key} = {c.value:g}; the limit is a business rule, "
                f"so it is not raised: the block that states it is read first instead",
                targets=[element, f"prompt_block:{block.key}"],
                ops=[{"op": "move", "element": "prompt_block", "key": block.key, "to": 1}],
                source="rules:constraint_block",
                impact=_impact(diagnosis, {element}),
            )
        )
    return out


def _needed_budget(diagnosis: Diagnosis, key: str, current: float) -> int:
    """Tool calls (skill loader included) or turns the failing cases' expectations need."""
    need = 0
    for cf in diagnosis.cases:
        if not any(i.element == f"constraint:{key}" for i in cf.items):
            continue
        calls = len(cf.expected.get("calls") or []) + (1 if cf.expected.get("skill") else 0)
        retries = sum(len([f for f in v if f != "ok"]) for v in (cf.expected.get("faults") or {}).values())
        need = max(need, calls + retries + (1 if key == "max_turns" else 0))
    if need == 0:
        need = int(current) + 1
    return int(need)


def _rules_and_blocks(diagnosis: Diagnosis, h: Harness) -> list[Proposal]:
    out = []
    counts: Counter[str] = Counter()
    for cf in diagnosis.cases:
        for el in {i.element for i in cf.items if i.element.startswith(("rule:", "prompt_block:"))}:
            counts[el] += 1
    for element, n in counts.most_common():
        kind, parent, key = split_element(element)
        if kind == "rule":
            try:
                skill = h.skill(str(parent))
                rule = next(r for r in skill.rules if r.key == key)
            except (KeyError, StopIteration):
                continue
            ops: list[dict[str, Any]] = []
            if not rule.text.lower().startswith("first,"):
                ops.append(
                    {
                        "op": "set",
                        "element": "rule",
                        "parent": parent,
                        "key": key,
                        "field": "text",
                        "value": "First, " + rule.text[0].lower() + rule.text[1:],
                    }
                )
            if skill.rules.index(rule) > 0:
                ops.append({"op": "move", "element": "rule", "parent": parent, "key": key, "to": 1})
            if not ops:
                continue
            out.append(
                Proposal(
                    id="",
                    title=f"reword rule {parent}.{key} as a first step and move it to the top of its skill",
                    rationale=f"the rule was not followed in {n} failed case(s) of skill {parent}",
                    targets=[element],
                    ops=ops,
                    source="rules:rule_not_followed",
                    impact=_impact(diagnosis, {element}),
                )
            )
        else:
            block = next((b for b in h.prompt.blocks if b.key == key), None)
            if block is None or h.prompt.blocks.index(block) == 0:
                continue
            out.append(
                Proposal(
                    id="",
                    title=f"move prompt block {key} to the top",
                    rationale=f"{n} failed case(s) break what block {key} asks for",
                    targets=[element],
                    ops=[{"op": "move", "element": "prompt_block", "key": key, "to": 1}],
                    source="rules:block_not_followed",
                    impact=_impact(diagnosis, {element}),
                )
            )
    return out


def _retry(diagnosis: Diagnosis, h: Harness) -> list[Proposal]:
    retry = h.hooks.retry
    needed = retry.max_attempts
    kinds: set[str] = set()
    affected = 0
    for cf in diagnosis.cases:
        faults = cf.expected.get("faults") or {}
        for tool in cf.gave_up:  # the record shows the hook's attempts ran out on this tool
            plan = faults.get(tool) or []
            leading = next((i for i, f in enumerate(plan) if f == "ok"), len(plan))
            kinds.update(
                {"error": "tool_error", "empty": "empty_result", "malformed": "tool_error"}.get(f, f)
                for f in plan[:leading]
            )
            if retry.max_attempts <= leading < len(plan):  # the faults clear one attempt later
                needed = max(needed, leading + 1)
            affected += 1
    missing = sorted(
        k for k in kinds if k not in retry.on and k in ("tool_error", "timeout", "empty_result", "invalid_call")
    )
    ops: list[dict[str, Any]] = []
    if needed > retry.max_attempts:
        ops.append({"op": "set", "element": "hook", "key": "retry", "field": "max_attempts", "value": min(10, needed)})
    if missing:
        ops.append({"op": "set", "element": "hook", "key": "retry", "field": "on", "value": list(retry.on) + missing})
    if not ops:
        return []
    return [
        Proposal(
            id="",
            title=f"retry until the faults clear (max_attempts {retry.max_attempts} -> {min(10, needed)})"
            + (f", also on {', '.join(missing)}" if missing else ""),
            rationale=f"in {affected} failed case(s) a tool's faults lasted as long as the retry hook's {retry.max_attempts} attempt(s)",
            targets=["hook:retry"],
            ops=ops,
            source="rules:retry",
            impact=_impact(diagnosis, {"hook:retry"}) or float(affected),
        )
    ]


def _stale_names(diagnosis: Diagnosis, h: Harness) -> list[Proposal]:
    """Give a renamed tool or skill its former name back when the model keeps using it."""
    out = []
    in_use = {t.name for t in h.tools} | {s.name for s in h.skills} | {h.skill_loader.name}
    for entry in diagnosis.stale_names:
        kind, _, key = split_element(entry["element"])
        name = entry["name"]
        if kind not in ("tool", "skill") or entry.get("current") is None or name in in_use:
            continue
        try:
            element = h.skill(key) if kind == "skill" else h.tool(key)
        except KeyError:
            continue
        in_use.add(name)
        out.append(
            Proposal(
                id="",
                title=f"give {kind} {key} its {entry['version']} name back ({element.name} -> {name})",
                rationale=f"the model used {name}, the name of {kind} {key} in {entry['version']}, {entry['calls']} time(s) "
                f"in {entry['cases']} case(s): it follows the earlier harness, not the rename; restoring the name keeps "
                "this model working until one trained on varied harnesses replaces it",
                targets=[f"{kind}:{key}"],
                ops=[{"op": "set", "element": kind, "key": key, "field": "name", "value": name}],
                source="rules:stale_name",
                impact=_impact(diagnosis, {f"{kind}:{key}"}),
            )
        )
    return out


# -- an LLM proposer -------------------------------------------------------------------------

_SYSTEM = """You improve the harness of a customer-facing agent (skills, tools, system prompt blocks, \
constraints, hooks) so that a fixed model fails less. You never change the model. Answer with ONE JSON object:
{"proposals": [{"title": str, "rationale": str, "targets": [element names from the diagnosis], "ops": [op, ...]}]}
An op is {"op": "set", "element": "skill"|"tool"|"rule"|"prompt_block"|"constraint"|"hook"|"skill_loader",
"key": stable key, "parent": skill key (rules only), "field": ..., "value": ...} or
{"op": "move", "element": "rule"|"prompt_block", "key": ..., "parent": skill key (rules only), "to": 1-based position}.
Settable fields: skill/tool name, description; rule/prompt_block text; constraint value (within its range);
hook retry max_attempts/on/backoff_s/feedback_template. Keep {{ tool.KEY }} and {{ var }} templates intact.
Propose at most 3 small edits, each aimed at the largest failure clusters."""


def harness_brief(h: Harness) -> dict[str, Any]:
    """What an LLM proposer reads about the harness: every editable surface, by key.

    >>> harness_brief(h)["constraints"]["max_reply_chars"]["value"]   # doctest: +SKIP
    """
    return {
        "skills": [
            {
                "key": s.key,
                "name": s.name,
                "description": s.description,
                "tools": s.tools,
                "rules": [{"key": r.key, "text": r.text} for r in s.rules],
            }
            for s in h.skills
        ],
        "tools": [{"key": t.key, "name": t.name, "description": t.description} for t in h.tools],
        "prompt_blocks": [{"key": b.key, "text": b.text} for b in h.prompt.blocks],
        "constraints": {k: {"value": c.value, "min": c.min, "max": c.max} for k, c in h.prompt.constraints.items()},
        "retry": {"max_attempts": h.hooks.retry.max_attempts, "on": list(h.hooks.retry.on)},
    }


def proposer_messages(diagnosis: Diagnosis, h: Harness, *, clusters: int = 8) -> list[dict[str, str]]:
    """The chat an LLM proposer gets: the op language, the top clusters and the harness.

    >>> proposer_messages(diagnosis, h)[0]["role"]   # doctest: +SKIP
    """
    top = [
        {
            k: v
            for k, v in c.to_dict().items()
            if k in ("kind", "component", "element", "cases", "impact", "others", "details")
        }
        | {"example": c.examples[0].to_dict() if c.examples else None}
        for c in diagnosis.clusters[:clusters]
    ]
    user = json.dumps(
        {
            "run": diagnosis.run_id,
            "score": diagnosis.score,
            "failed": diagnosis.n_failed,
            "clusters": top,
            "harness": harness_brief(h),
        },
        ensure_ascii=False,
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def propose_llm(
    diagnosis: Diagnosis,
    harness: Harness,
    model: str,
    *,
    harness_dir: str | Path,
    api_base: str | None = None,
    backend: Any | None = None,
    max_tokens: int = 1500,
) -> tuple[list[Proposal], list[Proposal]]:
    """Ask ``model`` (a litellm string, ``local:PATH``) for edits; returns (valid, rejected)
    proposals. Raises :class:`~harnessctl.models.base.ModelError` when the model cannot be
    reached and :class:`ValueError` when its answer holds no JSON object.

    >>> valid, rejected = propose_llm(d, h, "openai/gpt-4o-mini", harness_dir="harnesses/livecommerce")   # doctest: +SKIP
    """
    llm = backend or resolve_model(model, api_base=api_base)
    response = llm.generate(
        proposer_messages(diagnosis, harness), [], GenerationSettings(temperature=0.0, max_tokens=max_tokens)
    )
    raw = _first_json_object(response.content or "")
    if raw is None:
        raise ValueError(f"the proposer {model} answered without a JSON object: {(response.content or '')[:200]!r}")
    items = raw.get("proposals") if isinstance(raw, dict) else None
    if not isinstance(items, list):
        raise ValueError(f'the proposer {model} answered without a "proposals" list')  # noqa: TRY004 - bad model output
    valid, rejected = [], []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            continue
        ops = item.get("ops") if isinstance(item.get("ops"), list) else []
        targets = [str(t) for t in item.get("targets") or []]
        p = Proposal(
            id=f"llm{n}",
            title=str(item.get("title") or f"proposal {n}")[:200],
            rationale=str(item.get("rationale") or "")[:1000],
            targets=targets,
            ops=ops,
            source=f"llm:{model}",
            impact=_impact(diagnosis, set(targets)),
        )
        check_proposal(p, harness, harness_dir)
        (valid if p.valid else rejected).append(p)
    return valid, rejected


def _first_json_object(text: str) -> Any | None:
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text[m.start() :])
            return obj
        except json.JSONDecodeError:
            continue
    return None
