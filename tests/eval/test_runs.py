"""Eval runs end to end through the real CLI: served stub models on loopback, run folders on
disk, a run killed with SIGKILL and resumed with nothing lost and nothing run twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.eval.store import RunStore

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"
HARNESS = REPO / "harnesses" / "livecommerce"


def eval_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["eval", "--runs-dir", str(tmp_path / "runs"), "--evals-dir", str(EVALS), "-H", str(HARNESS), *extra]


def test_ifeval_run_prints_one_json_summary_and_writes_the_run_folder(tmp_path, instant_stub):
    res = CliRunner().invoke(
        app,
        eval_args(
            tmp_path,
            "--suite",
            "ifeval",
            "--limit",
            "12",
            "--model",
            "openai/stub",
            "--api-base",
            instant_stub,
            "--no-cache",
            "--json",
            "--run-id",
            "ife",
        ),
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    s = data["suites"]["ifeval"]
    assert data["run_id"] == "ife" and s["n"] == 12 and 0.0 <= s["score"] <= 100.0
    assert {"p50", "p95", "p99"} <= set(s["latency"]) and s["latency"]["p50"] >= 0.0
    assert set(s["ifeval"]) >= {"prompt_strict", "prompt_loose", "instruction_strict", "instruction_loose"}
    store = RunStore.open(tmp_path / "runs" / "ife")
    assert len(store.results()) == 12 and store.summary()["suites"]["ifeval"]["n"] == 12
    manifest = store.manifest
    assert manifest["model"] == "openai/stub" and manifest["suites"]["ifeval"]["sha256"]
    assert manifest["harness"]["name"] == "livecommerce" and "litellm" in manifest["packages"]


def test_model_calls_are_cached_between_runs_unless_told_not_to(tmp_path, instant_stub, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the cache lives under ./.cache
    args = eval_args(
        tmp_path, "--suite", "ifeval", "--limit", "5", "--model", "openai/stub", "--api-base", instant_stub, "--json"
    )
    first = json.loads(CliRunner().invoke(app, args + ["--run-id", "a"]).stdout)
    second = json.loads(CliRunner().invoke(app, args + ["--run-id", "b"]).stdout)
    assert first["suites"]["ifeval"]["score"] == second["suites"]["ifeval"]["score"]
    assert sum(r.cached for r in RunStore.open(tmp_path / "runs" / "b").results()) == 5
    assert (tmp_path / ".cache" / "harnessctl" / "model_calls.sqlite").is_file()
    CliRunner().invoke(app, args + ["--run-id", "c", "--no-cache"])
    assert sum(r.cached for r in RunStore.open(tmp_path / "runs" / "c").results()) == 0


def test_bad_options_are_clear_errors(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, eval_args(tmp_path, "--suite", "nightly"))
    assert res.exit_code == 2 and "unknown suite 'nightly'" in res.output
    res = runner.invoke(app, eval_args(tmp_path, "--suite", "ifeval", "--model", "oracle"))
    assert res.exit_code == 2 and "oracle has no answers for IFEval" in res.output
    res = runner.invoke(app, eval_args(tmp_path, "--resume", "nope"))
    assert res.exit_code == 2 and "no such run" in res.output
    res = runner.invoke(app, eval_args(tmp_path, "--suite", "ifeval", "--latency-budget", "soon"))
    assert res.exit_code == 2 and "not a duration" in res.output
    assert runner.invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "-1")).exit_code == 2
    for flag, value in (("-j", "0"), ("--repeat", "0")):  # --limit 0 is every case
        res = runner.invoke(app, eval_args(tmp_path, "--model", "oracle", flag, value))
        assert res.exit_code == 2 and "must be at least 1, got 0" in res.output, (flag, res.output)
    (tmp_path / "afile").write_text("not a folder")
    afile = ["--runs-dir", str(tmp_path / "afile")]
    for cmd in (
        eval_args(tmp_path, "--model", "oracle", "--limit", "1"),
        ["eval", "--resume", "r1"],
        ["compare", "r1", "r2"],
        ["report", "r1"],
    ):
        res = runner.invoke(app, [*cmd, *afile])
        assert res.exit_code == 2 and "is a file, not a folder" in res.output, (cmd, res.output)
    res = runner.invoke(
        app, [*eval_args(tmp_path, "--model", "oracle", "--limit", "1"), "--runs-dir", str(tmp_path / "afile" / "sub")]
    )
    assert res.exit_code == 2 and "afile" in res.output and not isinstance(res.exception, OSError), res.output


def test_a_labels_file_with_a_bad_line_is_named_by_file_and_line(tmp_path):
    runner = CliRunner()
    good = json.dumps({"id": "x", "label": "pass", "episode": {}})
    cases = {
        "bad_line.jsonl": (good + "\nnot json\n" + good + "\n", "bad_line.jsonl:2: not JSON"),
        "bad_label.jsonl": (
            good + "\n" + json.dumps({"id": "y", "label": "ok"}) + "\n",
            "bad_label.jsonl:2: field 'label' must be",
        ),
        "binary.jsonl": ("", "not UTF-8 text"),
        "empty.jsonl": ("\n", "no labels in the file"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(b"\xff\xfe\x00" if name == "binary.jsonl" else text.encode())
        res = runner.invoke(app, ["judge", "calibrate", "--labels", str(path), "--judge", "openai/x"])
        assert res.exit_code == 2 and message in " ".join(res.output.split()), (name, res.output)
    res = runner.invoke(app, ["judge", "calibrate", "--labels", str(tmp_path), "--judge", "openai/x"])
    assert res.exit_code == 2 and "is a folder" in res.output
    res = runner.invoke(
        app, ["judge", "calibrate", "--labels", str(tmp_path / "bad_line.jsonl"), "--judge", "openai/x", "--limit", "0"]
    )
    assert res.exit_code == 2 and "--limit must be at least 1" in res.output


def _read_ids(path: Path) -> list[str]:
    ids = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ids.append(json.loads(line)["case_id"])
        except json.JSONDecodeError:
            pass  # a torn last line
    return ids


@pytest.mark.parametrize("suite", ["livestream", "ifeval"])
def test_a_run_killed_with_sigkill_resumes_with_every_case_exactly_once(tmp_path, slow_stub, suite):
    limit = 48
    cmd = [
        sys.executable,
        "-m",
        "harnessctl.cli.main",
        *eval_args(
            tmp_path,
            "--suite",
            suite,
            "--limit",
            str(limit),
            "--model",
            "openai/stub",
            "--api-base",
            slow_stub,
            "-j",
            "4",
            "--no-cache",
            "--run-id",
            "killed",
            "--json",
        ),
    ]
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    records = tmp_path / "runs" / "killed" / "records.jsonl"
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if records.is_file() and len(_read_ids(records)) >= 8:
                break
            if proc.poll() is not None:
                pytest.fail(f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    before = _read_ids(records)
    assert 8 <= len(before) < limit, "the kill must land in the middle of the run"
    assert not (tmp_path / "runs" / "killed" / "summary.json").exists()

    res = CliRunner().invoke(app, eval_args(tmp_path, "--resume", "killed", "--json"))
    assert res.exit_code == 0, res.output
    after = _read_ids(records)
    planned = RunStore.open(tmp_path / "runs" / "killed").manifest["case_ids"][suite]
    assert len(after) == len(set(after)) == limit  # nothing run twice
    assert set(after) == set(planned)  # nothing lost
    assert after[: len(before)] == before  # finished cases were kept, not redone
    summary = json.loads(res.stdout)
    assert summary["complete"] is True and summary["suites"][suite]["n"] == limit


def test_repeats_report_pass_hat_k(tmp_path):
    res = CliRunner().invoke(
        app,
        eval_args(tmp_path, "--suite", "livestream", "--model", "oracle", "--limit", "6", "--repeat", "3", "--json"),
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)["suites"]["livestream"]
    assert (s["n"], s["n_results"]) == (6, 18) and s["pass_hat_k"] == {"1": 100.0, "2": 100.0, "3": 100.0}


def test_the_human_view_shows_scores_latency_and_components(tmp_path):
    res = CliRunner().invoke(
        app, eval_args(tmp_path, "--suite", "robustness", "--model", "oracle", "--limit", "10", "--run-id", "h")
    )
    assert res.exit_code == 0, res.output
    for text in ("robustness", "100.0", "P95", "components", "--resume h", "harnessctl report h"):
        assert text in res.output


def test_a_stuck_case_becomes_a_recorded_timeout_not_a_stuck_run(tmp_path):
    from harnessctl.eval.runner import EvalConfig, run_eval
    from tests.eval.conftest import slow_model

    outcome = run_eval(
        EvalConfig(
            suites=["livestream"],
            model="stuck",
            limit=2,
            jobs=2,
            case_timeout_s=0.3,
            cache=False,
            evals_dir=str(EVALS),
            runs_dir=str(tmp_path),
            harness_path=str(HARNESS),
        ),
        backend=slow_model(2.0),
    )
    results = outcome.store.results()
    assert len(results) == 2
    assert all(r.termination == "timeout" and r.score == 0.0 and "timeout" in (r.error or "") for r in results)
    assert outcome.summary["suites"]["livestream"]["errors"] == 2


def test_records_in_a_run_read_back_as_episode_records(tmp_path):
    from harnessctl.eval.runner import EvalConfig, run_eval
    from harnessctl.runtime.record import EpisodeRecord, Termination, ToolStep

    outcome = run_eval(
        EvalConfig(
            suites=["robustness"],
            model="oracle",
            limit=8,
            evals_dir=str(EVALS),
            runs_dir=str(tmp_path),
            harness_path=str(HARNESS),
        )
    )
    for r in RunStore.open(outcome.store.root).results():
        rec = EpisodeRecord.from_dict(r.record)
        assert rec.case_id == r.case_id and rec.termination == Termination.REPLY and rec.reply
        assert all(isinstance(s, ToolStep) for s in rec.tool_steps) and rec.tools == []  # specs not stored
        assert rec.messages[0]["role"] == "system"
