"""Diagnose a run: its failures clustered by kind, score component and harness element, ranked
by impact (cases × score lost), each cluster with example cases.

Impact is the score lost by the cluster's cases (``1 - score`` each, on 0-1), so a cluster that
sinks ten cases to zero outranks one that costs a point on forty. A case with several failures
counts in each of its clusters: clusters say where to look, not a partition of the loss.

>>> d = diagnose_run("runs/20260301-101502-livestream-tiny")     # doctest: +SKIP
>>> d.clusters[0].kind, d.clusters[0].element, d.clusters[0].cases  # doctest: +SKIP
('missing_call', 'rule:price_promo.check_deals', 14)
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.eval.results import CaseResult
from harnessctl.eval.store import RunStore
from harnessctl.eval.suites import AGENT_SUITES, SuiteError, load_suite
from harnessctl.harness import HarnessError, load_harness

from .evaluate import RUN_CASES_DIR, read_items
from .failures import (
    RUNTIME,
    CaseFailures,
    FailureItem,
    failure_items,
    retries_exhausted,
)
from .stale import FormerName, FormerNameIndex, StaleCall, refused_names, relabel_stale, stale_calls, summarize_stale


@dataclass
class Example:
    """One failed case as a person reads it: what the viewer said, what the model did, what was expected."""

    suite: str
    case_id: str
    score: float
    query: str
    steps: list[str]
    reply: str
    expected: dict[str, Any]
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Cluster:
    """Failures of one kind, on one score component, involving one harness element."""

    kind: str
    component: str
    element: str
    cases: int
    lost: float  # sum of 1 - score over the cases, 0-1 each
    case_ids: list[str] = field(default_factory=list)
    others: dict[str, int] = field(default_factory=dict)  # confused-with element -> cases
    details: dict[str, int] = field(default_factory=dict)  # failure argument -> count
    examples: list[Example] = field(default_factory=list)

    @property
    def impact(self) -> float:
        return round(self.lost, 4)

    @property
    def harness_element(self) -> bool:
        return self.element != RUNTIME and not self.element.endswith(")")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "component": self.component,
            "element": self.element,
            "cases": self.cases,
            "impact": self.impact,
            "case_ids": self.case_ids,
            "others": self.others,
            "details": self.details,
            "examples": [e.to_dict() for e in self.examples],
        }


@dataclass
class Diagnosis:
    """What went wrong in a run, ranked; ``failed`` lists the failing slice as (suite, case id)."""

    run_id: str
    model: str | None
    n_results: int
    n_failed: int
    score: float  # 0-100 over all results
    clusters: list[Cluster]
    by_element: dict[str, float]
    by_component: dict[str, float]
    failed: list[tuple[str, str]]
    harness_path: str | None = None
    cases: list[CaseFailures] = field(default_factory=list, repr=False)
    #: Names the episodes used that their harness no longer has (see :mod:`.stale`), most used first.
    stale_names: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "model": self.model,
            "n_results": self.n_results,
            "n_failed": self.n_failed,
            "score": self.score,
            "by_element": self.by_element,
            "by_component": self.by_component,
            "clusters": [c.to_dict() for c in self.clusters],
            "failed": [list(k) for k in self.failed],
            "stale_names": self.stale_names,
        }


def diagnose_run(
    run: str | Path, *, runs_dir: str | Path = "runs", harness: Any | None = None, examples: int = 3
) -> Diagnosis:
    """Diagnose the run at ``run`` (a folder, or an id under ``runs_dir``).

    The suite cases are read from the run folder's ``cases/`` or the run's ``evals_dir``; the
    harness (for rule- and block-level elements) from the run's harness folder unless given.

    >>> diagnose_run("tiny1", runs_dir="runs").clusters[0].to_dict()["element"]   # doctest: +SKIP
    'skill:price_promo'
    """
    store = RunStore.open(run, runs_dir)
    manifest = store.manifest
    config = manifest.get("config") or {}
    if harness is None:
        harness = _load_harness(config.get("harness_path"))
    evals_dir = config.get("evals_dir", "evals")
    items = load_run_items(store.root, evals_dir, {r.suite for r in store.results()})
    return diagnose_results(
        store.results(),
        cases={k: item.case for k, item in items.items()},
        former=FormerNameIndex(config.get("harness_path"), items, evals_dir).for_case,
        harness=harness,
        run_id=store.run_id,
        model=manifest.get("model"),
        harness_path=config.get("harness_path"),
        examples=examples,
    )


def diagnose_results(
    results: list[CaseResult],
    *,
    cases: dict[tuple[str, str], Any] | None = None,
    harness: Any | None = None,
    run_id: str = "",
    model: str | None = None,
    harness_path: str | None = None,
    examples: int = 3,
    former: Callable[[str, str], dict[tuple[str, str], FormerName]] | None = None,
) -> Diagnosis:
    """:func:`diagnose_run` on results already in memory (``cases`` by (suite, case id)).

    ``former(suite, case_id)`` gives the names another version of the case's harness used
    (:class:`~harnessctl.loop.stale.FormerNameIndex`); a call by one of them is diagnosed as
    ``stale_name`` on the element the name meant instead of an unknown name.

    >>> diagnose_results(store.results(), cases=cases).clusters[0].kind   # doctest: +SKIP
    """
    cases = cases or {}
    failed_cases: list[CaseFailures] = []
    stale: dict[tuple[str, str], list[StaleCall]] = {}
    for r in results:
        if r.passed:
            continue
        case = cases.get((r.suite, r.case_id))
        items = failure_items(r.to_dict(), case, harness) or [FailureItem("low_score", "overall", RUNTIME)]
        record = r.record or {}
        calls = stale_calls(record, former(r.suite, r.case_id)) if former and refused_names(record) else []
        if calls:
            stale[(r.suite, r.case_id)] = calls
            items = relabel_stale(items, calls)
        failed_cases.append(_case_view(r, case, items))
    groups: dict[tuple[str, str, str], list[tuple[CaseFailures, FailureItem]]] = defaultdict(list)
    for cf in failed_cases:
        for item in cf.items:  # a case counts once per cluster (see _cluster); every detail is kept
            groups[(item.kind, item.component, item.element)].append((cf, item))
    clusters = [_cluster(key, members, examples) for key, members in groups.items()]
    clusters.sort(key=lambda c: (-c.lost, -c.cases, c.kind, c.element))
    by_element: dict[str, float] = defaultdict(float)
    by_component: dict[str, float] = defaultdict(float)
    for c in clusters:
        by_element[c.element] += c.lost
        by_component[c.component] += c.lost
    n = len(results)
    return Diagnosis(
        run_id=run_id,
        model=model,
        n_results=n,
        n_failed=len(failed_cases),
        score=round(100.0 * sum(r.score for r in results) / n, 2) if n else 0.0,
        clusters=clusters,
        by_element={k: round(v, 4) for k, v in sorted(by_element.items(), key=lambda kv: -kv[1])},
        by_component={k: round(v, 4) for k, v in sorted(by_component.items(), key=lambda kv: -kv[1])},
        failed=[(cf.suite, cf.case_id) for cf in failed_cases],
        harness_path=harness_path,
        cases=failed_cases,
        stale_names=summarize_stale(stale),
    )


def _cluster(key: tuple[str, str, str], members: list[tuple[CaseFailures, FailureItem]], n_examples: int) -> Cluster:
    kind, component, element = key
    per_case: dict[tuple[str, str], CaseFailures] = {}
    others: dict[str, int] = defaultdict(int)
    details: dict[str, int] = defaultdict(int)
    for cf, item in members:
        first = (cf.suite, cf.case_id) not in per_case
        per_case[(cf.suite, cf.case_id)] = cf
        if item.other and first:
            others[item.other] += 1
        if item.detail:
            details[item.detail] += 1
    ordered = sorted(per_case.values(), key=lambda cf: (cf.score, cf.case_id))
    return Cluster(
        kind=kind,
        component=component,
        element=element,
        cases=len(per_case),
        lost=sum(cf.lost for cf in per_case.values()),
        case_ids=[cf.case_id for cf in ordered],
        others=dict(sorted(others.items(), key=lambda kv: -kv[1])),
        details=dict(sorted(details.items(), key=lambda kv: -kv[1])[:10]),
        examples=[
            Example(
                cf.suite,
                cf.case_id,
                cf.score,
                cf.query,
                cf.steps,
                cf.reply,
                cf.expected,
                detail=next((i.detail for i in cf.items if (i.kind, i.element) == (kind, element)), ""),
            )
            for cf in ordered[:n_examples]
        ],
    )


def _case_view(r: CaseResult, case: Any | None, items: list[FailureItem]) -> CaseFailures:
    record = r.record or {}
    query = case.query if case is not None else _last_user(record)
    steps: list[str] = []
    for s in record.get("tool_steps") or []:
        args = json.dumps(s.get("arguments"), ensure_ascii=False) if s.get("arguments") is not None else "<unparsed>"
        status = "ok" if s.get("ok") else (s.get("error") or "failed")
        steps.append(f"{s.get('name')}({args}) -> {status}")
    if r.error:
        steps.append(f"error: {r.error}")
    expected: dict[str, Any] = {}
    if case is not None:
        exp = case.expect
        expected = {
            "skill": exp.skill,
            "calls": [c.tool for c in exp.calls if c.required],
            "facts": list(exp.facts),
            "forbidden": list(exp.forbidden),
            "handoff": exp.handoff,
        }
        if case.faults:
            expected["faults"] = dict(case.faults)
    return CaseFailures(
        suite=r.suite,
        case_id=r.case_id,
        score=r.score,
        items=items,
        query=query,
        steps=steps,
        reply=str(record.get("reply") or "")[:300],
        expected=expected,
        gave_up=retries_exhausted(record),
    )


def _last_user(record: dict[str, Any]) -> str:
    for m in reversed(record.get("messages") or []):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _load_harness(path: str | None) -> Any | None:
    if not path or not Path(path).is_dir():
        return None

    try:
        return load_harness(path, validate=False)
    except (HarnessError, OSError):
        return None


def load_run_cases(run_root: str | Path, evals_dir: str | Path, suites: set[str]) -> dict[tuple[str, str], Any]:
    """The agent cases of ``suites`` by (suite, case id): the run folder's own ``cases/<suite>.jsonl``
    first, else the suite file under ``evals_dir``. Suites that cannot be read are left out
    (elements then come from the records alone).

    >>> load_run_cases("runs/r1", "evals", {"livestream"})[("livestream", "ls-price-51001-0001")].intent   # doctest: +SKIP
    """
    return {k: item.case for k, item in load_run_items(run_root, evals_dir, suites).items()}


def load_run_items(run_root: str | Path, evals_dir: str | Path, suites: set[str]) -> dict[tuple[str, str], Any]:
    """:func:`load_run_cases` with each case's suite item (the case and the harness it runs under)."""
    out: dict[tuple[str, str], Any] = {}
    for suite in sorted(suites):
        own = Path(run_root) / RUN_CASES_DIR / f"{suite}.jsonl"
        if own.is_file():
            items = read_items(own, suite)
        elif suite in AGENT_SUITES:
            try:
                items = load_suite(suite, evals_dir)
            except SuiteError:
                continue
        else:
            continue
        for item in items:
            out[(suite, item.id)] = item
    return out
