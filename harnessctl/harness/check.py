"""Check a harness folder as a whole: read its files, validate them (:mod:`.validate`) and build
the harness (:mod:`.loader`), returning every problem rather than raising. ``harnessctl validate``
and the loop's edits read a folder through :func:`check_harness_dir`.

>>> check_harness_dir("harnesses/livecommerce").ok
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError, Issue
from .loader import build_harness, read_documents
from .model import Harness
from .validate import validate_documents


@dataclass
class HarnessCheck:
    """The result of checking a harness folder: its problems, and the harness when there are none."""

    root: str
    issues: list[Issue] = field(default_factory=list)
    harness: Harness | None = None

    @property
    def ok(self) -> bool:
        return not self.issues


def check_harness_dir(path: str | Path, *, backends: Iterable[str] | None = None) -> HarnessCheck:
    """Read and validate the harness folder at ``path``; never raises for bad content.

    >>> check = check_harness_dir("harnesses/livecommerce")      # doctest: +SKIP
    >>> check.ok, len(check.harness.skills)                        # doctest: +SKIP
    (True, 11)
    """
    root = str(path)
    try:
        docs = read_documents(path, round_trip=False)
        issues = validate_documents(docs, root=root, backends=backends)
        if issues:
            # Read again with positions, so that every issue names its line and column.
            return HarnessCheck(root, validate_documents(read_documents(path), root=root, backends=backends) or issues)
        return HarnessCheck(root, [], build_harness(docs, root=root))
    except HarnessError as e:
        return HarnessCheck(root, list(e.issues))
    except OSError as e:
        return HarnessCheck(root, [Issue(root, f"cannot read the harness folder: {e.strerror or e}")])


def validate_harness_dir(path: str | Path, *, backends: Iterable[str] | None = None) -> list[Issue]:
    """Every problem of the harness folder at ``path`` (empty when valid); never raises for bad content.

    >>> [str(i) for i in validate_harness_dir("harnesses/livecommerce")]   # doctest: +SKIP
    []
    """
    return check_harness_dir(path, backends=backends).issues
