"""Eval runs against the project's own tiny model, served on loopback by the embedded server, through
the real CLI: runs stopped by SIGKILL or SIGINT resume to exactly the planned cases with the
original settings (and Ctrl-C on a run of the in-process model exits 130 too); a model name the server does not serve fails before the first case; model
failures in the middle of a run are counted, reported, exit non-zero and run again on resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.eval.store import RunStore
from harnessctl.models.base import ModelError
from harnessctl.models.server import EmbeddedServer

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"
HARNESS = REPO / "harnesses" / "livecommerce"


class Recorded:
    """The tiny model behind the server, noting the settings of every request it answers; while
    ``failing`` is set it fails the way a crashed backend does."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.max_positions = inner.max_positions
        self.seen: list = []
        self.failing = False
        self._lock = threading.Lock()

    def generate(self, messages, tools, settings):
        with self._lock:
            self.seen.append(settings)
        if self.failing:
            raise ModelError("the accelerator fell over")
        return self.inner.generate(messages, tools, settings)

    def for_episode(self, case, harness):
        return self


@pytest.fixture(scope="module")
def served_tiny(tiny_model_path):
    from harnessctl.models.local import LocalModel

    model = Recorded(LocalModel(f"local:{tiny_model_path}"))
    server = EmbeddedServer(model, model_name="tiny").start()
    try:
        yield server.url, model
    finally:
        server.stop()


def eval_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["eval", "--runs-dir", str(tmp_path / "runs"), "--evals-dir", str(EVALS), "-H", str(HARNESS), *extra]


def _ids(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        out.append((d["suite"], d["case_id"]))
    return out


SETTINGS = ("--max-tokens", "24", "--temperature", "0.7", "--case-timeout", "90s")


def _start_and_stop(
    tmp_path: Path, model: list[str], run_id: str, sig: signal.Signals
) -> tuple[subprocess.CompletedProcess, list]:
    argv = [
        "harnessctl",
        *eval_args(
            tmp_path,
            "--suite",
            "livestream,variant",
            "--limit",
            "8",
            "-j",
            "2",
            *SETTINGS,
            "--no-cache",
            *model,
            "--run-id",
            run_id,
            "--json",
        ),
    ]
    # Ctrl-C handling as in a terminal, even when the tests run where SIGINT is ignored (a background job).
    start = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        f"sys.argv = {argv!r}; runpy.run_module('harnessctl.cli.main', run_name='__main__')"
    )
    cmd = [sys.executable, "-c", start]
    records = tmp_path / "runs" / run_id / "records.jsonl"
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if records.is_file() and len(_ids(records)) >= 3:
                break
            if proc.poll() is not None:
                pytest.fail(f"the run ended before it could be stopped: {proc.stderr.read()[-2000:]}")
            time.sleep(0.05)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), _ids(records)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "sigint"])
def test_a_stopped_run_resumes_to_exactly_the_planned_cases_with_its_own_settings(tmp_path, served_tiny, sig):
    url, model = served_tiny
    served = ["--model", "openai/tiny", "--api-base", url]
    stopped, before = _start_and_stop(tmp_path, served, f"stop-{sig.name}", sig)
    if sig == signal.SIGINT:
        assert stopped.returncode == 130 and "interrupted" in stopped.stderr and "Traceback" not in stopped.stderr
    assert 3 <= len(before) < 16, "the stop must land in the middle of the run"
    manifest = RunStore.open(tmp_path / "runs" / f"stop-{sig.name}").manifest
    assert manifest["config"]["max_tokens"] == 24 and manifest["config"]["temperature"] == 0.7  # typed, not redacted

    model.seen.clear()
    res = CliRunner().invoke(app, eval_args(tmp_path, "--resume", f"stop-{sig.name}", "--json"))
    assert res.exit_code == 0, res.output
    after = _ids(tmp_path / "runs" / f"stop-{sig.name}" / "records.jsonl")
    planned = [(s, c) for s, ids in manifest["case_ids"].items() for c in ids]
    assert len(after) == len(set(after)) == 16 and set(after) == set(planned)  # nothing lost, nothing twice
    assert after[: len(before)] == before
    # Every remaining case was answered by the model, with the run's own settings.
    assert model.seen, "the resumed cases must reach the model"
    assert {(s.max_tokens, s.temperature) for s in model.seen} == {(24, 0.7)}
    results = RunStore.open(tmp_path / "runs" / f"stop-{sig.name}").results()
    resumed = [r for r in results if (r.suite, r.case_id) not in before]
    assert resumed and all(r.error is None and r.termination != "model_error" for r in resumed)
    assert all(step["completion_tokens"] <= 24 for r in resumed for step in r.record["model_steps"])
    summary = json.loads(res.stdout)
    assert summary["complete"] is True and summary["errors"] == 0


@pytest.mark.slow
def test_ctrl_c_stops_a_run_of_the_in_process_model_with_exit_130_and_the_run_resumes(tmp_path, tiny_model_path):
    # The model answers on a batching worker thread of the CLI's own process: exit lets its batch
    # finish rather than tearing the process down under it (which aborted: "terminate called").
    local = ["--model", f"local:{tiny_model_path}"]
    stopped, before = _start_and_stop(tmp_path, local, "stop-local", signal.SIGINT)
    assert stopped.returncode == 130, stopped.stderr[-2000:]
    assert "interrupted" in stopped.stderr and "terminate called" not in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert 3 <= len(before) < 16, "the stop must land in the middle of the run"

    res = CliRunner().invoke(app, eval_args(tmp_path, "--resume", "stop-local", "--json"))
    assert res.exit_code == 0, res.output
    after = _ids(tmp_path / "runs" / "stop-local" / "records.jsonl")
    assert len(after) == len(set(after)) == 16 and after[: len(before)] == before


def test_a_model_name_the_server_does_not_serve_fails_before_the_first_case(tmp_path, served_tiny):
    url, model = served_tiny
    model.seen.clear()
    res = CliRunner().invoke(
        app, eval_args(tmp_path, "--suite", "variant", "--limit", "5", "--model", "openai/mia", "--api-base", url)
    )
    assert res.exit_code == 2, res.output
    assert "serves 'tiny', not 'mia'" in res.output and "--model openai/tiny" in res.output
    assert not model.seen and not (tmp_path / "runs").exists()  # no case ran, no run folder


def test_model_failures_mid_way_are_counted_reported_and_retried_on_resume(tmp_path, served_tiny):
    url, model = served_tiny
    model.failing = True
    try:
        res = CliRunner().invoke(
            app,
            eval_args(
                tmp_path,
                "--suite",
                "livestream",
                "--limit",
                "6",
                "--model",
                "openai/tiny",
                "--api-base",
                url,
                *SETTINGS,
                "--retries",
                "0",
                "--no-cache",
                "--run-id",
                "flaky",
                "--json",
            ),
        )
    finally:
        model.failing = False
    assert res.exit_code == 3, res.output
    summary = json.loads(res.stdout)
    s = summary["suites"]["livestream"]
    assert s["errors"] == 6 and s["score"] == 0.0 and s["pass_rate"] == 0.0 and s["components"] == {}
    assert "the accelerator fell over" in summary["first_errors"][0]["error"]
    assert "6 of 6 cases ended in an error" in res.stderr and "--resume flaky" in res.stderr
    results = RunStore.open(tmp_path / "runs" / "flaky").results()
    assert all(r.error and r.termination == "model_error" and not r.passed for r in results)

    res = CliRunner().invoke(app, eval_args(tmp_path, "--resume", "flaky", "--json"))
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["errors"] == 0 and summary["suites"]["livestream"]["n"] == 6
    store = RunStore.open(tmp_path / "runs" / "flaky")
    assert len(store.results(every_line=True)) == 12 and len(store.results()) == 6  # the retry's line counts


def test_a_tolerated_share_of_errors_exits_zero_and_says_so(tmp_path, served_tiny):
    url, model = served_tiny
    model.failing = True
    try:
        res = CliRunner().invoke(
            app,
            eval_args(
                tmp_path,
                "--suite",
                "livestream",
                "--limit",
                "2",
                "--model",
                "openai/tiny",
                "--api-base",
                url,
                "--retries",
                "0",
                "--no-cache",
                "--max-error-share",
                "1",
            ),
        )
    finally:
        model.failing = False
    assert res.exit_code == 0, res.output
    assert "2 of 2 cases ended in an error" in res.output and "within --max-error-share" in res.output


def test_cache_hits_are_counted_for_agent_suites(tmp_path, served_tiny, monkeypatch):
    url, model = served_tiny
    monkeypatch.chdir(tmp_path)
    args = eval_args(
        tmp_path,
        "--suite",
        "livestream",
        "--limit",
        "3",
        "--model",
        "openai/tiny",
        "--api-base",
        url,
        "--max-tokens",
        "16",
        "--json",
    )
    first = json.loads(CliRunner().invoke(app, [*args, "--run-id", "c1"]).stdout)
    model.seen.clear()
    second = json.loads(CliRunner().invoke(app, [*args, "--run-id", "c2"]).stdout)
    assert not model.seen  # every call answered from the cache
    s1, s2 = first["suites"]["livestream"], second["suites"]["livestream"]
    assert s1["cache_hits"] == 0 and s1["model_calls"] >= 3
    assert s2["cached"] == 3 and s2["cache_hits"] == s2["model_calls"] == s1["model_calls"]
    assert second["cache"]["hits"] == s1["model_calls"] and s2["score"] == s1["score"]
    assert s2["latency"]["p50"] is None  # no latency measured, rather than a latency of zero


def test_a_local_model_run_resumes_with_its_own_settings(tmp_path, tiny_model_path):
    """The in-process path (``local:``): a run cut back to its first record, as a kill leaves it,
    resumes with the manifest's typed settings (an int ``max_tokens``, not a redacted string)."""
    args = eval_args(
        tmp_path,
        "--suite",
        "livestream",
        "--limit",
        "3",
        "--model",
        f"local:{tiny_model_path}",
        "--max-tokens",
        "12",
        "--temperature",
        "0.5",
        "--no-cache",
        "--run-id",
        "loc",
        "--json",
    )
    assert CliRunner().invoke(app, args).exit_code == 0
    records = tmp_path / "runs" / "loc" / "records.jsonl"
    first = records.read_text().splitlines()[0]
    records.write_text(first + "\n" + first[: len(first) // 2])  # one case kept, one torn mid-write
    res = CliRunner().invoke(app, eval_args(tmp_path, "--resume", "loc", "--json"))
    assert res.exit_code == 0, res.output
    results = RunStore.open(tmp_path / "runs" / "loc").results()
    assert len(results) == 3 and all(r.error is None for r in results)
    assert all(0 < step["completion_tokens"] <= 12 for r in results for step in r.record["model_steps"])
