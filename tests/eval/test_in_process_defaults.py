"""Defaults that fit the machine: an in-process model without --limit runs an evenly spread
sample per suite (said in the summary; --all or --limit 0 runs every case), its case timeout is
scaled from a timed first case, and a timed-out case is an error with no score, never a low one."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.eval import runner as eval_runner
from harnessctl.eval.results import CaseResult
from harnessctl.eval.summary import summarize

from .test_eval_cli import eval_args


def test_an_in_process_model_samples_by_default_and_scales_its_case_timeout(tiny_model_path, tmp_path, monkeypatch):
    monkeypatch.setattr(eval_runner, "IN_PROCESS_LIMIT", 2)
    args = eval_args(tmp_path, "--model", f"local:{tiny_model_path}", "--max-tokens", "8", "--no-cache", "-j", "2")
    result = CliRunner().invoke(app, [*args, "--run-id", "sampled"])
    assert result.exit_code in (0, 3), result.output
    assert "sampled evenly: 2 of" in " ".join(result.stdout.split()) and "--all or --limit 0" in result.stdout
    manifest = json.loads((tmp_path / "runs" / "sampled" / "manifest.json").read_text())
    config = manifest["config"]
    assert manifest["planned"] == {"livestream": 2} and config["sampled"] is True
    assert config["preflight_case_s"] > 0
    assert config["case_timeout_s"] == eval_runner.scaled_timeout(config["preflight_case_s"], 2)


def test_all_and_limit_zero_mean_every_case_and_a_served_model_is_not_sampled():
    assert eval_runner.default_limit("shipped:hat", None, all_cases=True) == (None, False)
    assert eval_runner.default_limit("shipped:hat", 0) == (None, False)
    assert eval_runner.default_limit("openai/gpt-4o-mini", None) == (None, False)


def test_a_timed_out_case_is_an_error_not_a_low_score():
    scored = CaseResult("livestream", "a", score=0.8, passed=True)
    timed_out = CaseResult("livestream", "b", score=0.0, error="timeout after 60s", termination="timeout")
    s = summarize([scored, timed_out])["suites"]["livestream"]
    assert (s["score"], s["errors"], s["n_scored"]) == (80.0, 1, 1)


def test_the_timeout_hint_names_jobs_and_case_timeout(tmp_path, monkeypatch):
    from tests.eval.conftest import slow_model

    real = eval_runner.make_backend
    monkeypatch.setattr(eval_runner, "make_backend", lambda config, backend=None: real(config, slow_model(2.0)))
    monkeypatch.setattr(eval_runner, "preflight", lambda config, backend: None)
    args = eval_args(tmp_path, "--model", "openai/slow", "--limit", "2", "--case-timeout", "0.3s", "--no-cache")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3, result.output
    text = " ".join(result.stderr.split())
    assert "lower -j, now 8" in text and "raise --case-timeout, now 0.3s" in text
