"""Summaries, comparisons (a CI gate) and the HTML report, on real run folders."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.eval.compare import compare_results
from harnessctl.eval.report import render_report
from harnessctl.eval.results import CaseResult
from harnessctl.eval.store import RunStore
from harnessctl.eval.summary import summarize

INTENTS = ("price", "stock", "shipping", "complaint")


def make_results(n: int, failing: set[int], suite: str = "livestream", repeat: int = 0) -> list[CaseResult]:
    out = []
    for i in range(n):
        ok = i not in failing
        out.append(
            CaseResult(
                suite=suite,
                case_id=f"{suite}-{i:03d}",
                repeat=repeat,
                intent=INTENTS[i % 4],
                families=["op:tools"] if i % 3 == 0 else [],
                score=1.0 if ok else 0.4,
                passed=ok,
                components={"correctness": 1.0 if ok else 0.0, "tool_rationality": 1.0},
                failures=[] if ok else ["hallucinated_number"],
                latency_s=0.1 + 0.01 * i,
                termination="reply",
                record={
                    "messages": [{"role": "user", "content": f"question {i}"}],
                    "tool_steps": [],
                    "reply": f"answer <b>{i}</b>",
                },
            )
        )
    return out


def write_run(root, run_id: str, results: list[CaseResult]) -> RunStore:
    store = RunStore.create(
        root,
        {"model": "m", "harness": {"name": "livecommerce", "version": "v3"}, "config": {"latency_budget_s": 0.5}},
        run_id=run_id,
    )
    for r in results:
        store.append(r)
    store.close()
    return store


def test_summary_breaks_scores_down_by_component_intent_and_family():
    s = summarize(make_results(40, failing={0, 4, 8}), latency_budget_s=0.455)["suites"]["livestream"]
    assert s["n"] == 40 and s["score"] == pytest.approx(100 * (37 + 3 * 0.4) / 40, abs=0.01)
    assert s["components"]["correctness"] == pytest.approx(92.5)
    assert s["by_intent"]["price"]["n"] == 10 and s["by_intent"]["price"]["pass_rate"] == 70.0
    assert s["by_family"]["op:tools"]["n"] == 14
    assert s["failures"] == {"hallucinated_number": 3}
    assert s["latency"]["over_budget"] == pytest.approx(4 / 40)


def test_pass_hat_k_over_repeats():
    results = make_results(10, failing=set()) + make_results(10, failing={1, 2}, repeat=1)
    s = summarize(results)["suites"]["livestream"]
    assert s["n"] == 10 and s["n_results"] == 20
    assert s["pass_hat_k"] == {"1": 90.0, "2": 80.0}


def test_compare_pairs_cases_flags_flips_and_gates_on_the_threshold():
    a = make_results(50, failing={7})
    b = make_results(50, failing={1, 2, 3, 4, 5})
    cmp = compare_results(a, b, threshold=2.0, run_a="a", run_b="b")
    s = cmp.suites["livestream"]
    assert s.n_paired == 50 and s.delta.value == pytest.approx(-100 * 0.6 * 4 / 50)
    assert s.delta.low <= s.delta.value <= s.delta.high <= 0
    assert sorted(s.pass_to_fail) == [f"livestream-00{i}" for i in range(1, 6)] and s.fail_to_pass == ["livestream-007"]
    assert cmp.regression
    assert not compare_results(a, b, threshold=10.0).regression
    assert not compare_results(b, a, threshold=2.0).regression  # an improvement is never a regression


def test_compare_cli_exits_1_on_regression_and_0_otherwise(tmp_path):
    write_run(tmp_path, "base", make_results(30, failing=set()))
    write_run(tmp_path, "worse", make_results(30, failing={0, 1, 2, 3}))
    runner = CliRunner()
    res = runner.invoke(app, ["compare", "base", "worse", "--runs-dir", str(tmp_path), "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert data["regression"] is True and data["suites"]["livestream"]["pass_to_fail"][:2] == [
        "livestream-000",
        "livestream-001",
    ]
    res = runner.invoke(app, ["compare", "worse", "base", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 0 and "fail→pass" in res.output
    res = runner.invoke(app, ["compare", "base", "missing", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2 and "no such run" in res.output


def test_a_drop_inside_the_noise_is_named_as_such_and_the_interval_gate_lets_it_pass(tmp_path):
    """Two of 20 cases flipped: 6 points down, an interval that reaches 0. The default gate fails
    it and says the cases cannot tell it from noise; `--gate interval` passes it. Twelve of 40
    flipped is a drop beyond doubt: both gates fail it."""
    write_run(tmp_path, "v3", make_results(20, failing=set()))
    write_run(tmp_path, "v4", make_results(20, failing={0, 1}))
    runner = CliRunner()
    cmd = ["compare", "v3", "v4", "--runs-dir", str(tmp_path)]
    res = runner.invoke(app, cmd, env={"COLUMNS": "200"})
    text = " ".join(res.output.split())
    assert res.exit_code == 1, res.output
    assert "livestream: the drop's 95% interval [" in text and "at 20 paired cases it is not told apart" in text
    assert "regression in livestream: more than 1 point below v3 (its estimate)" in text
    res = runner.invoke(app, [*cmd, "--gate", "interval", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    live = data["suites"]["livestream"]
    assert data["gate"] == "interval" and live["delta"]["value"] == -6.0 and live["delta"]["high"] >= 0
    assert live["beyond_noise"] is False and live["regression"] is False

    write_run(tmp_path, "base40", make_results(40, failing=set()))
    write_run(tmp_path, "worse40", make_results(40, failing=set(range(0, 40, 3)) - {39}))
    for gate in ("point", "interval"):
        res = runner.invoke(
            app, ["compare", "base40", "worse40", "--runs-dir", str(tmp_path), "--gate", gate, "--json"]
        )
        live = json.loads(res.stdout)["suites"]["livestream"]
        assert res.exit_code == 1 and live["beyond_noise"] and live["regression"], (gate, live)
    res = runner.invoke(app, [*cmd, "--gate", "median"])
    assert res.exit_code == 2 and "--gate: expected one of point, interval, got 'median'" in res.output


def test_a_drop_on_one_paired_case_has_no_interval_and_is_never_beyond_doubt(tmp_path):
    """One case scored by both runs, and it dropped: its bootstrap resamples only itself, so the
    table shows no interval, the point gate still fails it, and the interval gate passes it."""
    write_run(tmp_path, "one-a", make_results(1, failing=set()))
    write_run(tmp_path, "one-b", make_results(1, failing={0}))
    runner = CliRunner()
    cmd = ["compare", "one-a", "one-b", "--runs-dir", str(tmp_path)]
    res = runner.invoke(app, cmd, env={"COLUMNS": "200"})
    text = " ".join(res.output.split())
    assert res.exit_code == 1, res.output
    assert (
        "1 case" in text and "the drop rests on one paired case, which cannot tell it apart from sampling noise" in text
    )
    res = runner.invoke(app, [*cmd, "--gate", "interval", "--json"])
    live = json.loads(res.stdout)["suites"]["livestream"]
    assert res.exit_code == 0 and live["delta"]["value"] == -60.0
    assert live["beyond_noise"] is False and live["regression"] is False


def test_compare_scores_only_the_shared_cases_and_names_a_suite_one_run_lacks(tmp_path):
    """A baseline over 40 cases and two suites, a candidate over 10 of those cases in one suite
    that skipped IFEval: the delta is on the 10 shared cases, and the suites each run lacks are
    named as such (with the skip reason), never a row of dashes and never a regression."""
    a = make_results(40, failing={20, 21, 22}) + make_results(8, failing=set(), suite="ifeval")
    write_run(tmp_path, "base", a)
    cand = write_run(
        tmp_path, "cand", make_results(10, failing=set()) + make_results(5, failing=set(), suite="variant")
    )
    cand.write_summary({"skipped": {"ifeval": "the oracle has no answers for general instructions"}})
    cmp = compare_results(a, cand.results(), threshold=1.0, skipped_b={"ifeval": "no answers"})
    live = cmp.suites["livestream"]
    assert (live.n_paired, live.only_a, live.only_b, live.score_a, live.delta.value) == (10, 30, 0, 100.0, 0.0)
    assert cmp.suites["ifeval"].present_in == "A" and cmp.suites["ifeval"].skipped_b == "no answers"
    assert cmp.suites["variant"].present_in == "B" and not cmp.regression

    res = CliRunner().invoke(app, ["compare", "base", "cand", "--runs-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "on the cases both runs scored" in text
    assert "livestream: compared on the 10 shared cases; left out 30 only in A, 0 only in B" in text
    assert "ifeval: only run A has it (8 cases); run B skipped it: the oracle has no answers" in text
    assert "variant: only run B has it (5 cases); run A did not run it" in text
    assert re.search(r"ifeval\s+A only", res.output) and "—" not in res.output
    data = json.loads(
        CliRunner().invoke(app, ["compare", "base", "cand", "--runs-dir", str(tmp_path), "--json"]).stdout
    )
    assert data["suites"]["ifeval"]["present_in"] == "A" and data["suites"]["livestream"]["present_in"] == "both"


def _timed_out(results: list[CaseResult], ids: set[int]) -> list[CaseResult]:
    """``results`` with the cases numbered ``ids`` ended as the runner ends a timed-out case."""
    for i in ids:
        r = results[i]
        r.score, r.passed, r.failures, r.error, r.termination = 0.0, False, ["error"], "timeout after 120s", "timeout"
    return results


def test_a_case_that_errored_is_left_out_of_the_comparison_not_counted_as_a_low_score(tmp_path):
    """The same harness run twice; on the second run, under load, four of 30 cases timed out. They
    have no score: counted as zeros they would be a 13-point regression made by the machine.
    They are left out of the pairs on both sides, named, and the verdict is on the 26 cases both
    runs scored (a real drop among those still fails)."""
    a = make_results(30, failing={9})
    b = _timed_out(make_results(30, failing={9}), {0, 1, 2, 3})
    cmp = compare_results(a, b, threshold=1.0, run_a="a", run_b="b")
    live = cmp.suites["livestream"]
    assert (live.n_paired, live.delta.value, live.regression) == (26, 0.0, False)
    assert live.errors_b == [f"livestream-00{i}" for i in range(4)] and live.errors_a == [] and live.pass_to_fail == []
    assert cmp.errors == {"a": 0, "b": 4} and not cmp.regression
    assert compare_results(b, a).suites["livestream"].errors_a == live.errors_b  # either side
    # a suite whose every case errored in B is still B's: not "only run A has it"
    every = compare_results(make_results(3, failing=set()), _timed_out(make_results(3, failing=set()), {0, 1, 2}))
    assert every.suites["livestream"].present_in == "both" and every.suites["livestream"].n_paired == 0
    worse = _timed_out(make_results(30, failing={5, 6, 7, 8, 9}), {0, 1})
    assert compare_results(a, worse, threshold=1.0).regression  # the scored cases still decide

    write_run(tmp_path, "calm", a)
    write_run(tmp_path, "loaded", b)
    runner = CliRunner()
    res = runner.invoke(app, ["compare", "calm", "loaded", "--runs-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    warning = " ".join(res.stderr.split())
    assert "warning: 4 cases of run B (loaded) ended in an error and have no score (4 × timeout after 120s)" in warning
    assert "not counted as low scores; `harnessctl eval --resume loaded` runs them again" in warning
    assert "livestream: left out 0 case(s) that errored in A, 4 in B (no score)" in " ".join(res.stdout.split())
    data = json.loads(runner.invoke(app, ["compare", "calm", "loaded", "--runs-dir", str(tmp_path), "--json"]).stdout)
    assert data["errors"] == {"a": 0, "b": 4} and data["suites"]["livestream"]["n_paired"] == 26
    assert data["suites"]["livestream"]["errors_b"][0] == "livestream-000"


def test_report_is_one_self_contained_html_file_with_plots_and_drill_down(tmp_path):
    results = make_results(30, failing={2, 5}) + make_results(10, failing=set(), suite="robustness")
    store = write_run(tmp_path, "r", results)
    res = CliRunner().invoke(app, ["report", "r", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    html = (store.root / "report.html").read_text()
    body = html.split("<body>", 1)[1]
    assert not re.search(r"(src|href)=[\"']?https?:", html)  # nothing fetched from anywhere
    assert body.count("<svg") >= 5  # scores by suite, per-suite intents/components, latency, failures
    assert "livestream-002" in body and "hallucinated_number" in body
    assert "answer &lt;b&gt;2&lt;/b&gt;" in body  # episode text is escaped, not injected
    res = CliRunner().invoke(app, ["report", "r", "--runs-dir", str(tmp_path), "--json"])
    assert json.loads(res.stdout)["suites"]["robustness"]["score"] == 100.0


def test_render_report_handles_an_empty_suite_list():
    html = render_report([], {"run_id": "empty"})
    assert "<html" in html
