"""The loop's journal: ``loops/<id>/journal.jsonl``, one line per finished step, flushed as it ends.

Each step has a name that is the same on every run of the loop (``baseline``, ``r1.diagnose``,
``c2.slice``...). :meth:`Journal.step` returns a finished step's recorded payload instead of
running it again, so a loop stopped at any point (Ctrl-C, a kill) resumes where it stopped:
finished steps are read back, the interrupted one runs again (its evaluation run resumes with
only its missing cases). A line torn by a kill is cut off before the next append.

>>> import tempfile
>>> j = Journal(tempfile.mkdtemp())
>>> j.step("baseline", lambda: {"score": 4.5})
{'score': 4.5}
>>> j.step("baseline", lambda: {"score": 99.0})       # finished: read back, not run
{'score': 4.5}
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.sim.jsonl import read_jsonl

JOURNAL = "journal.jsonl"
#: Written on every line; bumped when a step's payload changes shape.
JOURNAL_SCHEMA_VERSION = 1


class LoopInterrupted(HarnessctlError):
    """Raised by a journal told to stop after a number of steps (to test and demonstrate resume)."""


class Journal:
    """The steps of one loop, in order."""

    def __init__(self, folder: str | Path, *, stop_after: int | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / JOURNAL
        self._repair()
        self.entries: list[dict[str, Any]] = self._read()
        self._done = {e["step"]: e for e in self.entries}
        self.stop_after = stop_after
        self.written = 0  # steps this process wrote

    def _repair(self) -> None:
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "rb+") as f:
                f.truncate(keep)

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []

        def damaged(where: str, e: json.JSONDecodeError) -> ValueError:
            return ValueError(f"{where}: damaged journal line ({e.msg}); delete it to run that step again")

        return [entry for _, entry in read_jsonl(self.path, damaged)]

    def done(self, step: str) -> dict[str, Any] | None:
        """The payload of a finished step, or None."""
        entry = self._done.get(step)
        return entry["data"] if entry is not None else None

    def step(self, step: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The recorded payload of ``step`` if it finished before, else ``run()``'s, recorded."""
        previous = self.done(step)
        if previous is not None:
            return previous
        data = run()
        self.record(step, data)
        return data

    def record(self, step: str, data: dict[str, Any]) -> None:
        entry = {
            "step": step,
            "t": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "data": data,
            "schema_version": JOURNAL_SCHEMA_VERSION,
        }
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.entries.append(entry)
        self._done[step] = entry
        self.written += 1
        if self.stop_after is not None and self.written >= self.stop_after:
            raise LoopInterrupted(f"stopped after {self.written} step(s); resume the loop to go on")
