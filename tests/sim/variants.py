"""Harness variants made by hand in the tests: proof that scoring goes by key."""

from __future__ import annotations

from pathlib import Path

from harnessctl.harness import Harness
from harnessctl.harness.store import HarnessStore


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


def harness_at(version: str, repo_root: Path) -> Harness:
    """The shipped harness at ``version``, resolved the way the CLI does: from a git tag, or from
    the commit that recorded ``version:`` in harness.yaml where tags did not travel."""
    return HarnessStore(repo_root / "harnesses" / "livecommerce").resolve(version).harness
