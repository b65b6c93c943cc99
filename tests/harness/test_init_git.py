"""`harnessctl init` puts a new harness under git (versions live there): outside a repository it
creates one and commits the starter, so `tag v1` works next; inside one it says the command."""

from __future__ import annotations

import json
import subprocess

import pytest

from .harness_support import run_cli


@pytest.fixture
def identity(monkeypatch):
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Mia")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "mia@example.com")


def test_outside_a_repository_init_creates_one_and_tag_works_next(tmp_path, identity):
    shop = tmp_path / "myshop"
    result = run_cli("init", str(shop))
    assert result.exit_code == 0, result.output
    assert "a new git repository" in result.stdout and "harnessctl tag v1" in result.stdout
    tracked = subprocess.run(["git", "-C", str(shop), "ls-files"], capture_output=True, text=True).stdout.split()
    assert "harness.yaml" in tracked and "skills/greeting.yaml" in tracked
    tagged = run_cli("tag", "v1", "-m", "first", "-H", str(shop))
    assert tagged.exit_code == 0, tagged.output


def test_inside_a_repository_it_says_the_command_that_commits_it(tmp_path, identity):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = run_cli("init", str(tmp_path / "myshop"), "--json")
    git = json.loads(result.stdout)["git"]
    assert git["created"] is False and git["repository"] == str(tmp_path)
    assert git["next"] == f'git add {tmp_path / "myshop"} && git commit -m "myshop: starter harness"'
    assert not (tmp_path / "myshop" / ".git").exists()


def test_no_git_leaves_git_alone(tmp_path):
    result = run_cli("init", str(tmp_path / "myshop"), "--no-git", "--json")
    assert json.loads(result.stdout)["git"] is None and not (tmp_path / "myshop" / ".git").exists()
