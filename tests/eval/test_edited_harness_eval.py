"""`eval --harness <an edited copy>` evaluates under the edited harness: the model sees the new
surface (renamed tool and skill, reworded rule, the new constraint value, blocks in the new order)
and the scorer expects it, by stable key. A policy that follows the harness it is given holds;
one that memorised the old surface falls, on exactly the edited elements.

This is what the weekly-edit demo (`make demo`) relies on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.harness import load_harness
from harnessctl.harness.save import save_harness
from harnessctl.loop.edits import apply_edit, read_patch

runner = CliRunner()
#: The demo's weekly edit (scripts/weekly-edit.yaml), read as `harnessctl patch` reads it.
WEEKLY_EDIT = read_patch(Path(__file__).resolve().parents[2] / "scripts" / "weekly-edit.yaml")[1]


@pytest.fixture(scope="module")
def edited(livecommerce_path, tmp_path_factory):
    """A copy of the shipped harness with this week's edit, written as a user's harness folder."""
    folder = tmp_path_factory.mktemp("weekly") / "harness"
    save_harness(apply_edit(load_harness(livecommerce_path), WEEKLY_EDIT), folder, base=livecommerce_path)
    return folder


def _eval(model, harness, runs, run_id, repo_root, *extra):
    args = ["eval", "--suite", "livestream", "--model", model, "-H", str(harness), "--runs-dir", str(runs)]
    args += ["--run-id", run_id, "--evals-dir", str(repo_root / "evals"), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (runs / run_id / "records.jsonl").read_text().splitlines()]


def _tool_names(rows):
    return {s["key"]: s["name"] for r in rows for s in r["record"]["tool_steps"]}


def test_the_edited_surface_is_what_the_policy_sees_and_what_the_scorer_expects(
    edited, livecommerce_path, repo_root, tmp_path
):
    old = _eval("oracle", livecommerce_path, tmp_path, "old", repo_root, "--limit", "20")
    new = _eval("oracle", edited, tmp_path, "new", repo_root, "--limit", "20")
    assert sorted(r["case_id"] for r in old) == sorted(r["case_id"] for r in new)  # written as they finish
    # the policy calls the tool and loads the skill by their new names, and is scored right for it
    assert _tool_names(old)["promotions"] == "get_promotions" and _tool_names(new)["promotions"] == "find_deals"
    loads = [s["arguments"].get("name") for r in new for s in r["record"]["tool_steps"] if s["key"] == "load_skill"]
    assert "price_and_deals" in loads and "explain_price" not in loads
    assert all(r["score"] == 1.0 for r in new), [r["failures"] for r in new if r["score"] < 1.0]
    # the system prompt states the new limit, second, and the replies keep to it
    system = new[0]["record"]["messages"][0]["content"]
    assert system.split("\n\n")[1].startswith("Reply in at most 100 characters")
    assert all(len(r["record"]["reply"]) <= 100 for r in new)
    assert any(len(r["record"]["reply"]) > 100 for r in old)


def test_a_policy_that_memorised_the_old_surface_falls_on_the_edited_elements(
    edited, livecommerce_path, repo_root, tmp_path
):
    blind = f"oracle-blind:{livecommerce_path}"
    old = _eval(blind, livecommerce_path, tmp_path, "old", repo_root, "--limit", "20")
    new = _eval(blind, edited, tmp_path, "new", repo_root, "--limit", "20")
    assert all(r["score"] == 1.0 for r in old)
    failures = {f for r in new for f in r["failures"]}
    assert {"over_length", "missing_call:promotions", "invalid_args:load_skill"} <= failures
    assert sum(r["score"] for r in new) < sum(r["score"] for r in old)


def test_a_checkpoint_is_prompted_with_the_edited_surface(edited, tiny_model_path, repo_root, tmp_path):
    rows = _eval(f"local:{tiny_model_path}", edited, tmp_path, "tiny", repo_root, "--limit", "2", "--max-tokens", "4")
    system = rows[0]["record"]["messages"][0]["content"]
    assert "at most 100 characters" in system and "price_and_deals" in system and "explain_price" not in system


@pytest.mark.slow
def test_the_edit_check_script_evaluates_both_shipped_models_under_both_edits(repo_root, tmp_path):
    """`make edit-check` (scripts/edit_check.sh), at two cases per run: six runs, each edited one
    compared with its model's run under the shipped harness."""
    import os
    import subprocess
    import sys

    out = tmp_path / "check"
    env = {**os.environ, "LIMIT": "2", "OUT": str(out), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    res = subprocess.run(
        ["bash", str(repo_root / "scripts" / "edit_check.sh")], capture_output=True, text=True, env=env, check=False
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    runs = {p.name: json.loads((p / "manifest.json").read_text()) for p in (out / "runs").iterdir()}
    assert set(runs) == {f"{m}-{h}" for m in ("hat", "fixed-sft") for h in ("shipped", "weekly-edit", "heldout")}
    # without --model the shipped HAT model runs; fixed-SFT is named
    models = {name: r["model"] for name, r in runs.items()}
    assert all(
        models[f"hat-{h}"] == "shipped:hat" and models[f"fixed-sft-{h}"] == "shipped:fixed-sft"
        for h in ("shipped", "heldout")
    )
    assert res.stdout.count("$ harnessctl eval") == 6 and res.stdout.count("$ harnessctl compare") == 4
    assert "Traceback" not in res.stderr
