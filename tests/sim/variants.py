"""Harness variants made by hand in the tests: proof that scoring goes by key."""

from __future__ import annotations

import subprocess
import tarfile
import io
from pathlib import Path

from harnessctl.harness import Harness, load_harness


def renamed_variant(h: Harness, *, max_reply_chars: int = 80, result_format: str = "text") -> Harness:
    """A hand-made variant: every tool, skill and the skill loader renamed, prompt blocks in
    reverse order, a tighter reply limit, tool results shown as text after a prefix."""
    v = h.copy()
    for t in v.tools:
        t.name = "fn_" + t.name[::-1]
    for s in v.skills:
        s.name = "playbook_" + s.key.upper()
    v.skill_loader.name = "open_playbook"
    v.prompt.blocks.reverse()
    v.prompt.constraints["max_reply_chars"].value = max_reply_chars
    v.hooks.message.tool_result_format = result_format
    v.hooks.message.tool_result_prefix = "RESULT >>"
    return v


def harness_at(rev: str, repo_root: Path, dest: Path) -> Harness | None:
    """The shipped harness as tagged ``rev`` in git (None where the tag is not available)."""
    done = subprocess.run(
        ["git", "archive", rev, "harnesses/livecommerce"], cwd=repo_root, capture_output=True
    )
    if done.returncode != 0:
        return None
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return load_harness(dest / "harnesses" / "livecommerce", validate=False)
