"""`harnessctl init` and `harnessctl validate`, driven through the real CLI on real folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessctl.harness import load_harness, render_harness

from .harness_support import LIVECOMMERCE, copy_harness, edit, run_cli, sim_backends, snapshot  # noqa: F401


def harnessctl(*args: str):
    return run_cli(*args)


# -- validate ----------------------------------------------------------------------------------


def test_validate_the_shipped_harness_exits_0_with_a_summary(sim_backends):
    result = harnessctl("validate", str(LIVECOMMERCE))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "✓ livecommerce v3: 11 skills, 8 tools, 6 blocks, 5 constraints"


def test_validate_json_reports_counts_and_no_issues(sim_backends):
    result = harnessctl("validate", "-H", str(LIVECOMMERCE), "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report == {
        "valid": True,
        "path": str(LIVECOMMERCE),
        "name": "livecommerce",
        "version": "v3",
        "counts": {"skills": 11, "tools": 8, "blocks": 6, "constraints": 5},
        "issues": [],
    }


def test_validate_finds_the_only_harness_under_harnesses_by_default(tmp_path, monkeypatch, sim_backends):
    copy_harness(tmp_path / "harnesses" / "livecommerce")
    monkeypatch.chdir(tmp_path)
    result = harnessctl("validate")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("✓ livecommerce v3")


def test_validate_lists_every_error_as_file_line_col_message_path_hint(tmp_path, monkeypatch, sim_backends):
    copy_harness(tmp_path / "harnesses" / "shop")
    root = Path("harnesses/shop")
    monkeypatch.chdir(tmp_path)
    edit(root, "skills/greeting.yaml", "description:", "descripton:")
    edit(root, "prompt.yaml", "value: 120", "value: 250")
    edit(root, "tools/stock_check.yaml", "sim.get_stock", "sim.get_stocks")
    result = harnessctl("validate", "harnesses/shop")
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [
        "harnesses/shop/prompt.yaml:30:12: max_reply_chars: value 250 is outside its range [60, 200]"
        " ($.constraints.max_reply_chars.value) — change the value, or widen min/max if the new value is intended",
        "harnesses/shop/skills/greeting.yaml:3:1: unknown field 'descripton' ($.descripton) — did you mean 'description'?",
        "harnesses/shop/tools/stock_check.yaml:4:10: unknown backend 'sim.get_stocks' ($.backend) — did you mean 'sim.get_stock'?",
        "✗ harnesses/shop: 3 problems",
    ]


def test_validate_json_lists_the_issues_with_their_positions(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    edit(root, "hooks.yaml", "max_attempts: 2", "max_attempts: two")
    result = harnessctl("validate", str(root), "--json")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False and report["counts"] is None
    assert report["issues"] == [
        {
            "file": f"{root}/hooks.yaml",
            "message": "max_attempts: expected a whole number, found the text 'two'",
            "line": 3,
            "col": 17,
            "path": "$.retry.max_attempts",
            "hint": "",
        }
    ]


def test_validate_a_folder_that_is_no_harness_says_what_to_do(tmp_path):
    result = harnessctl("validate", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path}: not a harness folder (no harness.yaml); run `harnessctl init {tmp_path}`" in result.stderr


def test_validate_refuses_two_different_folders(tmp_path):
    result = harnessctl("validate", str(LIVECOMMERCE), "-H", str(tmp_path))
    assert result.exit_code == 2
    assert "give the harness folder once" in result.stderr


# -- init --------------------------------------------------------------------------------------


def test_init_creates_a_valid_commented_starter_that_renders(tmp_path, sim_backends):
    target = tmp_path / "harnesses" / "my-shop"
    result = harnessctl("init", str(target))
    assert result.exit_code == 0, result.output
    assert "created harness my-shop" in result.stdout
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*.yaml"))
    assert files == [
        "harness.yaml",
        "hooks.yaml",
        "prompt.yaml",
        "skills/greeting.yaml",
        "skills/order_help.yaml",
        "skills/product_question.yaml",
        "tools/order_status.yaml",
        "tools/product_details.yaml",
    ]
    for f in ("harness.yaml", "prompt.yaml", "hooks.yaml", "skills/greeting.yaml", "tools/product_details.yaml"):
        assert (target / f).read_text().startswith("#"), f"{f} explains itself in comments"
    check = harnessctl("validate", str(target))
    assert check.exit_code == 0, check.output
    assert check.stdout.strip() == "✓ my-shop: 3 skills, 2 tools, 4 blocks, 3 constraints"
    h = load_harness(target)
    assert {t.backend for t in h.tools} == {"sim.get_product", "sim.get_order_status"}
    assert h.hooks.guards and h.hooks.retry.on
    prompt = render_harness(h).system_prompt
    assert "You are Ava, the host of the My Shop live shopping room." in prompt
    assert "at most 150 characters" in prompt and "{{" not in prompt


def test_init_refuses_to_overwrite_a_harness_and_writes_nothing(tmp_path):
    target = tmp_path / "shop"
    assert harnessctl("init", str(target)).exit_code == 0
    edit(target, "prompt.yaml", "value: 150", "value: 120")
    before = snapshot(tmp_path)
    result = harnessctl("init", str(target))
    assert result.exit_code == 2
    assert "already holds a harness" in result.stderr and "nothing was written" in result.stderr
    assert snapshot(tmp_path) == before


def test_init_refuses_a_folder_with_only_part_of_a_harness(tmp_path):
    (tmp_path / "half" / "skills").mkdir(parents=True)
    before = snapshot(tmp_path)
    result = harnessctl("init", str(tmp_path / "half"))
    assert result.exit_code == 2 and "(skills)" in result.stderr
    assert snapshot(tmp_path) == before


def test_init_into_the_current_folder_next_to_other_files(tmp_path, monkeypatch, sim_backends):
    (tmp_path / "README.md").write_text("our team's notes\n")
    monkeypatch.chdir(tmp_path)
    result = harnessctl("init", "--name", "team_shop", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["name"] == "team_shop" and "harness.yaml" in report["files"]
    assert (tmp_path / "README.md").read_text() == "our team's notes\n"
    assert load_harness(tmp_path).name == "team_shop"
    assert not list(tmp_path.glob(".harnessctl-init.*"))


@pytest.mark.parametrize("name", ["has space", "-dash-first", "x" * 65])
def test_init_refuses_an_invalid_name(tmp_path, name):
    result = harnessctl("init", str(tmp_path / "shop"), "--name", name)
    assert result.exit_code == 2
    assert "is not a valid harness name" in result.stderr
    assert not (tmp_path / "shop").exists()


def test_init_on_a_file_is_refused(tmp_path):
    (tmp_path / "taken").write_text("a file")
    result = harnessctl("init", str(tmp_path / "taken"))
    assert result.exit_code == 2 and "exists and is not a folder" in result.stderr
