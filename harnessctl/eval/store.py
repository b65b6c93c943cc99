"""The run folder: ``runs/<id>/manifest.json``, ``records.jsonl``, ``summary.json``.

``records.jsonl`` gets one line per finished case, written and flushed at once, so a run killed
at any moment (even with SIGKILL) leaves every finished case on disk. A kill in the middle of a
write leaves a torn last line: :meth:`RunStore.results` ignores it and :meth:`RunStore.repair`
cuts it off before a resumed run appends, so the case is simply run again — none lost, none twice.

>>> import tempfile
>>> store = RunStore.create(tempfile.mkdtemp(), {"model": "oracle"}, run_id="demo")
>>> store.append(CaseResult(suite="livestream", case_id="c1", score=1.0, passed=True))
>>> [r.case_id for r in RunStore.open(store.root).results()]
['c1']
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from .results import CaseResult

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
SUMMARY = "summary.json"
REPORT = "report.html"

#: Manifest keys whose values must never be written (API keys and the like).
_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.I)


class RunError(Exception):
    """A run folder is missing or damaged; the message says which file and what to do."""


def new_run_id(suite: str, model: str, now: float | None = None) -> str:
    """A sortable, readable run id: ``20260301-101502-livestream-oracle``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    slug = re.sub(r"[^A-Za-z0-9]+", "-", model.split("/")[-1].split(":")[-1]).strip("-").lower()[:32] or "model"
    return f"{stamp}-{suite}-{slug}"


def scrub(obj: Any) -> Any:
    """A copy of ``obj`` with every secret-looking key's value removed."""
    if isinstance(obj, dict):
        return {k: ("<redacted>" if _SECRET.search(str(k)) else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


class RunStore:
    """One run folder. Appends are thread-safe; each line is flushed before ``append`` returns."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._lock = threading.Lock()
        self._fh = None

    @property
    def run_id(self) -> str:
        return self.root.name

    # -- creating and opening --------------------------------------------------------------
    @classmethod
    def create(cls, runs_dir: str | Path, manifest: dict[str, Any], run_id: str | None = None) -> "RunStore":
        """A new run folder with its manifest (secrets scrubbed). A taken id gets a suffix."""
        runs_dir = Path(runs_dir)
        if runs_dir.exists() and not runs_dir.is_dir():
            raise RunError(f"{runs_dir}: is a file, not a folder for runs; pass --runs-dir with a folder (it is created if missing)")
        base = run_id or new_run_id(str(manifest.get("suite", "run")), str(manifest.get("model", "model")))
        root, i = runs_dir / base, 1
        while root.exists():
            if run_id is not None:
                raise RunError(f"{root}: a run with this id exists; resume it with --resume {run_id} or choose another --run-id")
            i += 1
            root = runs_dir / f"{base}-{i}"
        root.mkdir(parents=True)
        store = cls(root)
        store.write_manifest({**manifest, "run_id": root.name})
        (root / RECORDS).touch()
        return store

    @classmethod
    def open(cls, path: str | Path, runs_dir: str | Path | None = None) -> "RunStore":
        """An existing run, by folder path or by id under ``runs_dir``."""
        p = Path(path)
        if not (p / MANIFEST).is_file() and runs_dir is not None and (Path(runs_dir) / str(path) / MANIFEST).is_file():
            p = Path(runs_dir) / str(path)
        if not p.is_dir():
            if runs_dir is not None and Path(runs_dir).exists() and not Path(runs_dir).is_dir():
                raise RunError(f"{runs_dir}: is a file, not a folder of runs; pass --runs-dir with the folder that holds your runs")
            where = f" (looked in {runs_dir})" if runs_dir is not None else ""
            listing = Path(runs_dir) if runs_dir is not None else Path("runs")
            raise RunError(f"{path}: no such run{where}; list runs with `ls {listing}/`")
        if not (p / MANIFEST).is_file():
            raise RunError(f"{p}: not a run folder (no {MANIFEST})")
        return cls(p)

    # -- manifest and summary ---------------------------------------------------------------
    @property
    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / MANIFEST).read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise RunError(f"{self.root / MANIFEST}:{e.lineno}: not valid JSON ({e.msg})") from None

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        _atomic_write(self.root / MANIFEST, json.dumps(scrub(manifest), indent=2, ensure_ascii=False, default=str) + "\n")

    def write_summary(self, summary: dict[str, Any]) -> Path:
        path = self.root / SUMMARY
        _atomic_write(path, json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
        return path

    def summary(self) -> dict[str, Any] | None:
        path = self.root / SUMMARY
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    # -- records ---------------------------------------------------------------------------
    def repair(self) -> int:
        """Cut a torn last line (a write killed half-way) off ``records.jsonl``; returns the
        number of bytes removed. Call before appending to a resumed run."""
        path = self.root / RECORDS
        if not path.is_file():
            path.touch()
            return 0
        size = path.stat().st_size
        if size == 0:
            return 0
        with open(path, "rb+") as f:
            # Find the last newline by reading backwards in blocks.
            pos, block, last_nl = size, 65536, -1
            while pos > 0 and last_nl < 0:
                start = max(0, pos - block)
                f.seek(start)
                chunk = f.read(pos - start)
                idx = chunk.rfind(b"\n")
                if idx >= 0:
                    last_nl = start + idx
                pos = start
            keep = last_nl + 1
            if keep < size:
                f.truncate(keep)
                return size - keep
        return 0

    def results(self) -> list[CaseResult]:
        """Every complete line, in order. A torn last line is skipped; a damaged line elsewhere
        is an error naming the file and line."""
        path = self.root / RECORDS
        if not path.is_file():
            return []
        data = path.read_bytes()
        lines = data.split(b"\n")
        torn_tail = not data.endswith(b"\n")
        out: list[CaseResult] = []
        for i, raw in enumerate(lines):
            if not raw.strip():
                continue
            last = i == len(lines) - 1
            try:
                out.append(CaseResult.from_dict(json.loads(raw)))
            except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as e:
                if last and torn_tail:
                    break  # a write cut short by a kill: the case runs again on resume
                raise RunError(f"{path}:{i + 1}: damaged record ({e}); delete that line and resume the run") from None
        return out

    def append(self, result: CaseResult) -> None:
        """Write one result line and flush it to the OS before returning."""
        line = json.dumps(result.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            if self._fh is None:
                self._fh = open(self.root / RECORDS, "a", encoding="utf-8")
            self._fh.write(line)
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
