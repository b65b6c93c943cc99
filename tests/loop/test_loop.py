"""The improvement loop: keeps only edits that win without a regression, journals every step,
and resumes after an interrupt without redoing finished steps."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harnessctl.loop.improve import LoopConfig, commit_best, run_loop
from harnessctl.loop.journal import Journal, LoopInterrupted
from tests.conftest import LIVECOMMERCE

from .conftest import EVALS
from .support import ShortRuleSpanModel, git, harness_repo, hc, run_cli


def _config(tmp_path, **kw) -> LoopConfig:
    return LoopConfig(
        **{
            "model": "short-rule-span",
            "harness_dir": str(LIVECOMMERCE),
            "budget": 3,
            "limit": 20,
            "cache": False,
            "evals_dir": str(EVALS),
            "loops_dir": str(tmp_path / "loops"),
            **kw,
        }
    )


def test_the_loop_keeps_edits_that_win_without_a_regression(tmp_path):
    result = run_loop(_config(tmp_path), loop_id="l1", backend=ShortRuleSpanModel())
    assert result.kept, result.rows
    assert sum(result.final.values()) > sum(result.baseline.values())
    for row in result.rows:
        if row["kept"]:
            assert row["slice"]["score_after"] > row["slice"]["score_before"]
            assert all(row["after"][s] >= row["before"][s] - 1.0 for s in row["before"])
    steps = [
        json.loads(line)["step"] for line in (tmp_path / "loops" / "l1" / "journal.jsonl").read_text().splitlines()
    ]
    assert steps[0] == "baseline" and steps[-1] == "end" and len(steps) == len(set(steps))
    assert (tmp_path / "loops" / "l1" / "harness" / result.kept[0]["candidate"] / "harness.yaml").is_file()


def test_the_loop_resumes_after_an_interrupt_without_redoing_finished_steps(tmp_path):
    whole = run_loop(_config(tmp_path, loops_dir=str(tmp_path / "whole")), loop_id="w", backend=ShortRuleSpanModel())
    cfg = _config(tmp_path)
    with pytest.raises(LoopInterrupted):
        run_loop(cfg, loop_id="r", backend=ShortRuleSpanModel(), stop_after=3)  # baseline, diagnose, propose
    journal = tmp_path / "loops" / "r" / "journal.jsonl"
    assert [json.loads(x)["step"] for x in journal.read_text().splitlines()] == [
        "baseline",
        "r1.diagnose",
        "r1.propose",
    ]
    baseline_records = (tmp_path / "loops" / "r" / "runs" / "baseline" / "records.jsonl").read_bytes()
    seen = []
    resumed = run_loop(cfg, loop_id="r", backend=ShortRuleSpanModel(), on_step=lambda name, data: seen.append(name))
    assert "baseline" not in seen and "r1.propose" not in seen and seen[0].startswith("c1.")
    assert (
        tmp_path / "loops" / "r" / "runs" / "baseline" / "records.jsonl"
    ).read_bytes() == baseline_records  # not run again
    assert resumed.final == whole.final and [r["proposal"] for r in resumed.rows] == [r["proposal"] for r in whole.rows]
    steps = [json.loads(x)["step"] for x in journal.read_text().splitlines()]
    assert len(steps) == len(set(steps))


def test_the_best_harness_of_a_loop_is_committed_on_its_branch_naming_the_kept_edits(tmp_path):
    folder = harness_repo(tmp_path, LIVECOMMERCE)
    config = _config(tmp_path, harness_dir=str(folder))
    result = run_loop(config, loop_id="a1", backend=ShortRuleSpanModel())
    assert result.kept, result.rows
    applied = commit_best(config, result)
    repo = folder.parent.parent
    assert applied.branch == "harness-loop/a1" == git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%s").strip() == "loop a1: " + "; ".join(r["proposal"] for r in result.kept)
    assert commit_best(config, dataclasses.replace(result, kept=[])) is None


def test_each_evaluation_of_the_loop_counts_its_cases_on_a_bar_of_its_own(tmp_path):
    """The baseline, each candidate's failing slice and its full run all go over the same suites:
    each gets its own tasks (named by its run), counted from 0 up to its total, so the rate and
    the time left shown are that evaluation's."""
    seen: dict[str, list[tuple[int, int]]] = {}
    run_loop(
        _config(tmp_path, budget=1, limit=6),
        loop_id="p",
        backend=ShortRuleSpanModel(),
        progress=lambda task, done, total: seen.setdefault(task, []).append((done, total)),
    )
    assert {"baseline livestream", "baseline robustness", "c1-slice livestream"} <= set(seen), sorted(seen)
    for task, counts in seen.items():
        assert [d for d, _ in counts] == sorted(d for d, _ in counts) and counts[-1][0] == counts[-1][1], task
    assert seen["baseline livestream"][-1] == (6, 6)


def test_a_slice_case_that_ended_in_an_error_is_left_out_of_both_slice_scores():
    """A failing case that timed out under the best harness scored nothing; under the candidate it
    is answered as badly as before. Counted as a 0 it would make the candidate look better."""
    from types import SimpleNamespace

    from harnessctl.eval.results import CaseResult
    from harnessctl.loop.improve import _slice

    def case(i: int, **kw) -> CaseResult:
        return CaseResult("livestream", f"c{i}", score=0.4, passed=False, **kw)

    before = [case(0), case(1), case(2), case(3, error="timeout after 120s")]
    before[3].score = 0.0
    after = [case(i) for i in range(4)]
    sl = _slice(lambda: SimpleNamespace(results=after, run_id="c1-slice"), before)
    assert (sl["score_before"], sl["score_after"], sl["errors"], sl["win"]) == (40.0, 40.0, 1, False)


def test_a_journal_line_torn_by_a_kill_is_cut_off_and_that_step_runs_again(tmp_path):
    j = Journal(tmp_path)
    j.step("a", lambda: {"x": 1})
    with open(j.path, "a", encoding="utf-8") as f:
        f.write('{"step": "b", "da')  # killed half-way through a write
    j2 = Journal(tmp_path)
    assert j2.done("a") == {"x": 1} and j2.done("b") is None
    assert j2.step("b", lambda: {"x": 2}) == {"x": 2}


def test_a_loop_resumed_with_other_settings_is_refused(tmp_path):
    with pytest.raises(LoopInterrupted):
        run_loop(_config(tmp_path), loop_id="s", backend=ShortRuleSpanModel(), stop_after=1)
    with pytest.raises(ValueError, match="other settings"):
        run_loop(_config(tmp_path, budget=9), loop_id="s", backend=ShortRuleSpanModel())


def test_loop_cli_runs_the_tiny_model_in_process_and_resumes_a_finished_loop(tmp_path, tiny_model_path):
    args = [
        "loop",
        "--model",
        f"local:{tiny_model_path}",
        "--budget",
        "1",
        "--suite",
        "livestream",
        "--limit",
        "2",
        "--evals-dir",
        str(EVALS),
        "--loops-dir",
        str(tmp_path / "loops"),
        "--loop-id",
        "tiny",
        "-H",
        str(LIVECOMMERCE),
        "--no-cache",
        "--max-tokens",
        "32",
        "--json",
    ]
    first = run_cli(*args)
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["loop_id"] == "tiny" and data["baseline"]["livestream"] <= 100.0
    assert len(data["rows"]) <= 1  # the budget: one candidate at most
    again = run_cli("loop", "--model", "ignored", "--resume", "tiny", "--loops-dir", str(tmp_path / "loops"), "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["final"] == data["final"]


def test_loop_cli_rejects_a_bad_suite_with_exit_2(tmp_path):
    proc = hc("loop", "--model", "oracle", "--suite", "ifeval", "-H", str(LIVECOMMERCE), "--loops-dir", str(tmp_path))
    assert proc.returncode == 2 and "--suite 'ifeval'" in proc.stderr


def test_an_llm_proposers_edit_is_tried_first_and_kept_when_it_wins(tmp_path):
    from harnessctl.models.scripted import ScriptedModel
    from harnessctl.models.server import serve_in_background

    answer = {
        "proposals": [
            {
                "title": "returns rule first",
                "rationale": "the returns policy call is missed",
                "targets": ["rule:shipping_returns.returns_from_policy"],
                "ops": [
                    {
                        "op": "move",
                        "element": "rule",
                        "parent": "shipping_returns",
                        "key": "returns_from_policy",
                        "to": 1,
                    }
                ],
            }
        ]
    }
    url, stop = serve_in_background(ScriptedModel([json.dumps(answer)], name="p", repeat_last=True), model_name="p")
    try:
        cfg = _config(tmp_path, budget=1, proposer="openai/p", proposer_api_base=url)
        result = run_loop(cfg, loop_id="llm", backend=ShortRuleSpanModel())
    finally:
        stop()
    row = result.rows[0]
    assert row["source"] == "llm:openai/p" and row["proposal"] == "returns rule first"
    assert row["kept"] and sum(result.final.values()) > sum(result.baseline.values())
