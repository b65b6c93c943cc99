"""Diagnosis: failures traced to harness elements, clustered, ranked by impact, with examples."""

from __future__ import annotations

import json

from harnessctl.eval.results import CaseResult
from harnessctl.harness import load_harness
from harnessctl.loop.diagnose import diagnose_results, diagnose_run
from harnessctl.loop.failures import failure_items, retries_exhausted
from harnessctl.sim.case import Case, Expectation, ExpectedCall
from tests.conftest import LIVECOMMERCE

from .support import hc


def _case(**expect) -> Case:
    return Case(id="c1", intent="price", query="how much?", expect=Expectation(**expect))


def test_plain_failures_get_a_component_and_an_element_derived_from_the_case_and_the_harness():
    h = load_harness(LIVECOMMERCE)
    case = _case(skill="price_promo", calls=[ExpectedCall("promotions")], fact_sources={"SAVE10": "promotions@P001"})
    result = {
        "failures": [
            "missing_call:promotions",
            "missing_fact:SAVE10",
            "wrong_skill:compliance",
            "over_length",
            "gave_up_early:stock_check",
            "budget_exhausted:max_turns",
        ],
        "record": {},
    }
    got = [(i.kind, i.component, i.element, i.other) for i in failure_items(result, case, h)]
    assert got == [
        ("missing_call", "tool_rationality", "rule:price_promo.check_deals", None),  # the rule that asks for the call
        ("missing_fact", "correctness", "tool:promotions", None),  # the tool the fact comes from
        ("wrong_skill", "skill_selection", "skill:price_promo", "skill:compliance"),
        ("over_length", "constraints", "constraint:max_reply_chars", None),
        ("gave_up_early", "tool_rationality", "hook:retry", "tool:stock_check"),
        ("budget_exhausted", "constraints", "constraint:max_turns", None),
    ]


def test_structured_failures_from_the_scorer_are_used_as_given():
    result = {
        "failures": [
            {
                "kind": "missing_call",
                "component": "tool_rationality",
                "element": "tool:promotions",
                "detail": "promotions",
            },
            {"kind": "late_skill", "component": "skill_selection", "element": {"kind": "skill", "key": "price_promo"}},
            {"kind": "over_length"},  # no element: derived as for a plain failure
        ],
        "record": {},
    }
    items = failure_items(result, None)
    assert [(i.kind, i.component, i.element) for i in items] == [
        ("missing_call", "tool_rationality", "tool:promotions"),
        ("late_skill", "skill_selection", "skill:price_promo"),
        ("over_length", "constraints", "constraint:max_reply_chars"),
    ]


def test_retries_exhausted_needs_the_last_attempt_to_fail_with_a_world_error_at_the_limit():
    steps = [{"key": "stock_check", "ok": False, "error": "timeout", "attempt": 1}]
    assert retries_exhausted({"retry": {"max_attempts": 2}, "tool_steps": steps}) == []
    steps.append({"key": "stock_check", "ok": False, "error": "tool_error", "attempt": 2})
    assert retries_exhausted({"retry": {"max_attempts": 2}, "tool_steps": steps}) == ["stock_check"]
    steps.append({"key": "stock_check", "ok": True, "error": None, "attempt": 3})
    assert retries_exhausted({"retry": {"max_attempts": 3}, "tool_steps": steps}) == []


def test_clusters_are_ranked_by_cases_times_score_lost():
    results = [
        CaseResult("livestream", "a", score=0.0, failures=["over_length"]),
        CaseResult("livestream", "b", score=0.9, failures=["over_length"]),
        CaseResult("livestream", "c", score=0.2, failures=["missing_call:promotions", "missing_call:promotions"]),
        CaseResult("livestream", "d", score=1.0, passed=True),
    ]
    d = diagnose_results(results)
    assert [(c.element, c.cases, round(c.impact, 2)) for c in d.clusters] == [
        ("constraint:max_reply_chars", 2, 1.1),
        ("tool:promotions", 1, 0.8),  # a case counts once per cluster
    ]
    assert d.n_failed == 3 and d.failed == [("livestream", "a"), ("livestream", "b"), ("livestream", "c")]


def test_a_weak_models_run_is_traced_to_the_rules_it_does_not_read(weak_run):
    d = diagnose_run(weak_run.store.root, harness=load_harness(LIVECOMMERCE))
    assert d.n_failed > 0
    elements = {c.element for c in d.clusters}
    # The model reads the first two rules of a skill: calls asked for by a later rule are missed.
    assert {"rule:complaint.hand_off", "rule:shipping_returns.returns_from_policy"} & elements
    top = d.clusters[0]
    assert top.impact == max(c.impact for c in d.clusters)
    ex = top.examples[0]
    assert ex.query and ex.expected["skill"] and isinstance(ex.steps, list)


def test_diagnose_cli_prints_json_and_writes_the_report_section(weak_run):
    proc = hc("diagnose", str(weak_run.store.root), "--json", "--report")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["n_failed"] > 0 and data["clusters"][0]["examples"]
    html = (weak_run.store.root / "report.html").read_text(encoding="utf-8")
    assert "<h2>Diagnosis" in html and html.index("<h2>Diagnosis") < html.index("<h2>Cases</h2>")


def test_report_cli_includes_the_diagnosis_section_ranked_by_impact_with_examples(weak_run, tmp_path):
    d = diagnose_run(weak_run.store.root)
    target = tmp_path / "report.html"
    proc = hc("report", str(weak_run.store.root), "--out", str(target))
    assert proc.returncode == 0, proc.stderr
    html = target.read_text(encoding="utf-8")
    assert f"<h2>Diagnosis — {d.n_failed} of {d.n_results} cases failed</h2>" in html
    assert html.index("<h2>Diagnosis") < html.index("<h2>Cases</h2>")
    section = html[html.index("<h2>Diagnosis") : html.index("<h2>Cases</h2>")]
    # the cluster table lists the clusters in impact order, each with its examples below
    rows = [
        section.index(f"<code>{c.element}</code></td><td class=num>{c.cases}</td><td class=num>{c.impact:.2f}</td>")
        for c in d.clusters[:3]
    ]
    assert rows == sorted(rows)
    top = d.clusters[0]
    assert f"#1 {top.kind} · {top.element} — {top.cases} cases" in section
    assert f"{top.examples[0].suite}/{top.examples[0].case_id}" in section and "viewer: " in section

    plain = tmp_path / "plain.html"
    assert hc("report", str(weak_run.store.root), "--out", str(plain), "--no-diagnosis").returncode == 0
    assert "<h2>Diagnosis" not in plain.read_text(encoding="utf-8")


def test_diagnose_cli_names_a_missing_run_and_exits_2(tmp_path):
    proc = hc("diagnose", "nope", "--runs-dir", str(tmp_path))
    assert proc.returncode == 2
    assert "nope: no such run" in proc.stderr and "Traceback" not in proc.stderr
