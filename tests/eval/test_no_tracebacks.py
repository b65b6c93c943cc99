"""Commands that used to end in a traceback or half-written output now end in one clear line:
a folder that cannot be written, Ctrl-C during a multi-process job, suites rebuilt outside git."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "harnesses" / "livecommerce"


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder nothing can be created in (tests may run as root, which ignores file modes)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        if locked in Path(path).absolute().parents:
            raise PermissionError(13, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    return locked


@pytest.mark.parametrize(
    "command",
    [
        ["init", "{locked}/shop"],
        ["model", "init", "--out", "{locked}/tiny", "-H", str(HARNESS), "--conversations", "5"],
    ],
    ids=["init", "model-init"],
)
def test_a_folder_that_cannot_be_written_is_one_clear_line(read_only, command):
    res = CliRunner().invoke(app, [part.format(locked=read_only) for part in command])
    assert res.exit_code == 2, res.output
    assert "permission denied: choose a folder you can write to" in " ".join(res.output.split())
    assert str(read_only) in res.output and not isinstance(res.exception, PermissionError)


def test_ctrl_c_during_trajectories_stops_every_process_with_one_line(tmp_path):
    out = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    argv = [
        "harnessctl",
        "augment",
        "--trajectories",
        "20000",
        "--n",
        "20",
        "--out",
        str(out),
        "-H",
        str(HARNESS),
        "--jobs",
        "2",
    ]
    # Ctrl-C handling as in a terminal, even when this test runs where SIGINT is ignored (a background job).
    start = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        f"sys.argv = {argv!r}; runpy.run_module('harnessctl.cli.main', run_name='__main__')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", start],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            pairs = out / "pairs.jsonl"
            if pairs.is_file() and pairs.stat().st_size > 10_000:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the job ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole process group
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130 and "interrupted" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-2000:]


def test_suites_rebuilt_outside_git_change_no_file(tmp_path, monkeypatch):
    shutil.copytree(HARNESS, tmp_path / "harnesses" / "livecommerce")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    res = CliRunner().invoke(app, ["eval", "build-suites", "--evals-dir", "evals", "--json"])
    assert res.exit_code == 2, res.output
    assert "not inside a git repository" in res.output
    assert not (tmp_path / "evals").exists()  # nothing half written


@pytest.mark.parametrize(
    ("command", "names"),
    [
        (["log", "-H", "{harness}"], "not inside a git repository"),  # a harness error (located)
        (["diff", "v1", "v2", "-H", "{harness}"], "not inside a git repository"),
        (["eval", "--suite", "nosuch", "-H", "{harness}"], "nosuch"),  # a usage error
    ],
)
def test_every_error_leads_with_error_whatever_raised_it(tmp_path, monkeypatch, command, names):
    """A harness outside git and an unknown suite read alike: one line that starts with `error:`."""
    harness = tmp_path / "harness"
    shutil.copytree(HARNESS, harness)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, [a.format(harness=harness) for a in command])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("error: "), res.output
    assert names in res.output and "Traceback" not in res.output
