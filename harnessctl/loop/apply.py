"""Apply an accepted edit: write the harness folder and commit it on a new branch (gitpython).

The edited harness is validated before anything is written (:func:`~harnessctl.harness.save.save_harness`
writes nothing for an invalid one). The branch is created from HEAD and checked out, the harness
files are written and committed — only them. If anything fails on the way, the folder, the branch
and HEAD are put back as they were: an invalid or half-written harness is never left behind.

>>> applied = commit_edit("harnesses/livecommerce", candidate, branch="edit/p1", message="raise max_tool_calls")  # doctest: +SKIP
>>> applied.branch, len(applied.commit)                                                                        # doctest: +SKIP
('edit/p1', 40)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.harness.errors import Issue
from harnessctl.harness.model import Harness
from harnessctl.harness.store import HarnessStore, StoreError

from .edits import apply_edit, write_candidate


@dataclass
class AppliedEdit:
    branch: str
    commit: str
    previous_branch: str | None
    files: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def branch_name(text: str) -> str:
    """A git-safe branch name from a proposal id or title.

    >>> branch_name("harness-edit/raise max_tool_calls 1 -> 4")
    'harness-edit/raise-max_tool_calls-1-4'
    """
    name = re.sub(r"[^A-Za-z0-9._/-]+", "-", text).strip("-/.")
    name = re.sub(r"-{2,}", "-", name).replace("..", ".")
    return name[:80] or "harness-edit"


def commit_edit(harness_dir: str | Path, candidate: Harness, *, branch: str, message: str) -> AppliedEdit:
    """Write ``candidate`` over the harness folder on a new ``branch`` and commit it there.

    Refuses (:class:`StoreError`, nothing changed) uncommitted changes under the harness folder,
    an existing branch, or a candidate that does not validate.

    >>> commit_edit("harnesses/livecommerce", edited, branch="edit/p1", message="x").branch   # doctest: +SKIP
    """
    import git

    store = HarnessStore(harness_dir)
    repo = store.repo
    folder = Path(repo.working_tree_dir) / store.rel if store.rel else Path(repo.working_tree_dir)
    where = store.rel or "."
    if repo.git.status("--porcelain", "--untracked-files=all", "--", str(folder)).strip():
        raise StoreError(
            Issue(
                where,
                "uncommitted changes under the harness folder",
                hint="commit or discard them before applying an edit",
            )
        )
    if branch in [h.name for h in repo.heads]:
        raise StoreError(Issue(where, f"branch {branch} exists already", hint="choose another --branch"))
    try:
        repo.git.check_ref_format("--branch", branch)
    except git.GitCommandError:
        raise StoreError(
            Issue(where, f"{branch!r} is not a valid branch name", hint="use letters, digits, - _ / .")
        ) from None
    previous = None if repo.head.is_detached else repo.active_branch.name
    head_before = repo.head.commit.hexsha
    new = repo.create_head(branch, head_before)
    try:
        new.checkout()
        write_candidate(candidate, folder, folder)
        changed = repo.git.status("--porcelain", "--untracked-files=all", "--", str(folder))
        files = [line[3:] for line in changed.splitlines() if line.strip()]
        if not files:
            raise StoreError(Issue(where, "the edit changes no file", hint="nothing to commit"))
        repo.git.add("-A", "--", str(folder))
        repo.git.commit("-m", message, "--", str(folder))
        return AppliedEdit(branch=branch, commit=repo.head.commit.hexsha, previous_branch=previous, files=files)
    except BaseException:
        _restore(repo, folder, head_before, previous, branch)
        raise


def commit_proposal(
    harness_dir: str | Path, current: Harness, proposal: Any, *, branch: str | None = None
) -> AppliedEdit:
    """Apply ``proposal`` (a :class:`~harnessctl.loop.edits.Proposal`) to ``current``, the harness
    in ``harness_dir``, and commit it with :func:`commit_edit` on ``branch`` (default
    ``harness-edit/<its title>``), the message giving its title, rationale and targets.

    >>> commit_proposal("harnesses/livecommerce", harness, proposal).branch   # doctest: +SKIP
    'harness-edit/raise-max_tool_calls-from-1-to-4'
    """
    return commit_edit(
        harness_dir,
        apply_edit(current, proposal.ops),
        branch=branch or branch_name(f"harness-edit/{proposal.title}"),
        message=f"{current.name}: {proposal.title}\n\n{proposal.rationale}\nTargets: {', '.join(proposal.targets)}",
    )


def _restore(repo: Any, folder: Path, head_before: str, previous: str | None, branch: str) -> None:
    """Undo :func:`commit_edit`: the commit, the files under the folder, the branch (other files untouched)."""
    if repo.head.commit.hexsha != head_before:
        repo.git.reset("-q", "--soft", head_before)
    repo.git.reset("-q", "--", str(folder))
    repo.git.checkout("-q", head_before, "--", str(folder))
    repo.git.clean("-q", "-f", "-d", "--", str(folder))
    repo.git.checkout("-q", previous or head_before)
    repo.delete_head(branch, force=True)
