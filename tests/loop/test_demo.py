"""The documented demo: a failing run of the embedded tiny model, its diagnosis, an accepted
edit and a gated release with the production pointer moved, each step timed."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def run_script(name: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``scripts/NAME`` with bash from the repository root, as a user types it."""
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / name), *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_loop_demo_goes_from_a_failing_run_to_a_gated_release(tmp_path, tiny_model_path):
    env = {**os.environ, "PYTHON": sys.executable, "TINY_MODEL": str(tiny_model_path), "LIMIT": "2", "MAX_TOKENS": "48"}
    proc = run_script("loop_demo.sh", str(tmp_path / "demo"), env=env)
    text = proc.stdout
    timed = re.findall(r"-- (.+?): (\d+\.\d) s", text)
    assert [t for t, _ in timed] == [
        "first release (no gate): v1 goes to production",
        "evaluate the deployed model",
        "diagnose",
        "propose and accept an edit",
        "gated release",
    ]
    assert "failure clusters" in text and "applied p1 on branch" in text and "released v2" in text
    assert "production -> v2" in text
    assert (tmp_path / "demo" / "releases" / "livecommerce-v2.md").is_file()
    assert (tmp_path / "demo" / "runs" / "failing" / "report.html").is_file()


def test_the_vllm_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(REPO_ROOT / "scripts" / "vllm_latency.sh")], check=False).returncode == 0


@pytest.mark.slow
def test_the_weekly_edit_demo_runs_whether_or_not_models_are_shipped(tmp_path):
    """`make demo`: the weekly edit, its diff, and both models (or their stand-ins) under v3 and v4."""
    out = tmp_path / "demo"
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
        "OUT": str(out),
        "LIMIT": "3",
        "MAX_TOKENS": "48",  # the shipped checkpoints' turns, cut short: the test checks the steps, not scores
        "NO_COLOR": "1",
    }
    proc = run_script("demo.sh", env=env)
    text = proc.stdout
    assert "$ harnessctl diff v3 v4 -H" in text
    for change in ("renamed get_promotions → find_deals", "renamed explain_price → price_and_deals", "120 → 100"):
        assert change in text
    for name in ("hat", "fixed-sft"):
        shipped = (REPO_ROOT / "harnessctl" / "models" / "data" / name / "config.json").is_file()
        assert (f"--model shipped:{name}" in text) == shipped
        assert (f"shipped:{name} is not shipped in this package yet" in text) != shipped
        assert f"$ harnessctl compare {name}-v3 {name}-v4" in text
        for rev in ("v3", "v4"):
            assert (out / "runs" / f"{name}-{rev}" / "summary.json").is_file()
        assert (out / f"report-{name}.html").is_file()
