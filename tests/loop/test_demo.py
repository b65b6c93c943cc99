"""The documented demo: a failing run of the embedded tiny model, its diagnosis, an accepted
edit and a gated release with the production pointer moved, each step timed."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_loop_demo_goes_from_a_failing_run_to_a_gated_release(tmp_path, tiny_model_path):
    env = {**os.environ, "PYTHON": sys.executable, "TINY_MODEL": str(tiny_model_path), "LIMIT": "2", "MAX_TOKENS": "48"}
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "loop_demo.sh"), str(tmp_path / "demo")],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
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
