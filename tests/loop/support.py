"""Test doubles and fixtures of the loop room.

:class:`ShortRuleSpanModel` is a deliberately weakened model: the simulator's oracle, except that
it reads only the first two rules of a skill — a call that a later rule asks for is never made.
Moving that rule up is a harness edit that fixes it, which is what the loop must find.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harnessctl.sim.oracle import OracleModel, OraclePolicy

_TOOL_REF = re.compile(r"\{\{\s*tool\.([A-Za-z0-9_]+)\s*\}\}")


def ignored_tools(harness: Any, skill_key: str | None, span: int = 2) -> set[str]:
    """Tools that only rules past the first ``span`` of the skill ask for."""
    if not skill_key:
        return set()
    try:
        rules = harness.skill(skill_key).rules
    except KeyError:
        return set()
    seen = {t for r in rules[:span] for t in _TOOL_REF.findall(r.text)}
    late = {t for r in rules[span:] for t in _TOOL_REF.findall(r.text)}
    return late - seen


class _ShortSpanPolicy(OraclePolicy):
    def __init__(self, case: Any, harness: Any, span: int) -> None:
        super().__init__(case, harness)
        self.span = span
        skipped = ignored_tools(harness, case.expect.skill, span)
        self.calls = [c for c in self.calls if c.tool not in skipped]

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return _ShortSpanPolicy(case, harness, self.span)


class ShortRuleSpanModel(OracleModel):
    """The oracle, reading only the first ``span`` rules of each skill."""

    name = "short-rule-span"
    cacheable = False

    def __init__(self, span: int = 2) -> None:
        super().__init__()
        self.span = span

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return _ShortSpanPolicy(case, harness, self.span)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def harness_repo(tmp_path: Path, source: Path) -> Path:
    """A fresh git repository holding a copy of ``source`` at ``harnesses/<name>``, one commit;
    returns the harness folder. Tests never touch the project's own repository."""
    root = tmp_path / "repo"
    folder = root / "harnesses" / source.name
    shutil.copytree(source, folder)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "loop@example.com")
    git(root, "config", "user.name", "loop tests")
    git(root, "add", ".")
    git(root, "commit", "-qm", "harness")
    return folder


def hc(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real CLI (``python -m harnessctl.cli.main``) and return what it did."""
    import sys

    from tests.conftest import REPO_ROOT

    return subprocess.run(
        [sys.executable, "-m", "harnessctl.cli.main", *args], check=False, capture_output=True, text=True,
        cwd=cwd or REPO_ROOT, timeout=timeout,
    )
