"""Errors raised by the harness library, each pointing at a file (and line) with a hint."""

from __future__ import annotations

from dataclasses import dataclass

from harnessctl.errors import HarnessctlError


@dataclass(frozen=True)
class Issue:
    """One problem found in a harness: where it is, what is wrong, how to fix it."""

    file: str
    message: str
    line: int | None = None
    col: int | None = None
    path: str = ""  # JSON path inside the document, e.g. "$.rules[2].key"
    hint: str = ""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        text = f"{where}: {self.message}"
        if self.path:
            text += f" ({self.path})"
        if self.hint:
            text += f" — {self.hint}"
        return text


class HarnessError(HarnessctlError):
    """A harness could not be loaded or is invalid. ``issues`` lists every problem found."""

    def __init__(self, issues: list[Issue] | Issue | str):
        if isinstance(issues, str):
            issues = [Issue(file="", message=issues)]
        elif isinstance(issues, Issue):
            issues = [issues]
        self.issues: list[Issue] = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))
