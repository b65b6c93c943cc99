"""`eval -H myshop` (a harness made with `init`) refuses suites whose cases expect skills or tools
(by key) that myshop lacks, and says how to build suites for it; the project's suites are found
from inside a harness folder too."""

from __future__ import annotations

from typer.testing import CliRunner

from harnessctl.cli.main import app

from .test_eval_cli import EVALS, REPO


def test_a_suite_written_for_another_harness_is_refused_with_how_to_build_one(tmp_path):
    runner = CliRunner()
    shop = tmp_path / "myshop"
    assert runner.invoke(app, ["init", str(shop), "--no-git"]).exit_code == 0
    args = ["eval", "-H", str(shop), "--evals-dir", str(EVALS), "--runs-dir", str(tmp_path / "runs")]
    result = runner.invoke(app, [*args, "--model", "oracle", "--limit", "5"])
    text = " ".join(result.stderr.split())
    assert result.exit_code == 2, result.output
    assert "suite livestream: its cases expect what myshop" in text and "tools:" in text
    assert f"harnessctl eval build-suites -H {shop}" in text and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_from_inside_a_harness_folder_the_projects_suites_are_found(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO / "harnesses" / "livecommerce")
    result = CliRunner().invoke(
        app, ["eval", "--model", "oracle", "--limit", "3", "--runs-dir", str(tmp_path / "runs"), "--json"]
    )
    assert result.exit_code == 0, result.output
