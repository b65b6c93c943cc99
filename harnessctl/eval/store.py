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

from harnessctl.errors import HarnessctlError
from harnessctl.harness.fileio import atomic_write
from harnessctl.sim.jsonl import read_jsonl

from .results import CaseResult
from .summary import summarize

MANIFEST = "manifest.json"
RECORDS = "records.jsonl"
SUMMARY = "summary.json"
REPORT = "report.html"

#: Manifest keys whose values are never written, matched on the whole name (lower case, ``-`` as
#: ``_``): ``max_tokens`` is a setting, ``token`` is a secret.
SECRET_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "authorization",
        "password",
        "passwd",
        "secret",
        "token",
        "access_token",
        "auth_token",
        "refresh_token",
        "bearer_token",
        "secret_key",
        "client_secret",
        "private_key",
        "aws_secret_access_key",
        "openai_api_key",
        "anthropic_api_key",
        "hf_token",
    }
)
#: Environment variables whose values are secrets (their values are redacted wherever they appear).
_SECRET_ENV = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
#: A run id is a name: letters, digits, ``.``, ``_`` and ``-`` (no path separators).
RUN_ID = re.compile(r"^[A-Za-z0-9._-]+$")
REDACTED = "<redacted>"


class RunError(HarnessctlError):
    """A run folder is missing or damaged; the message says which file and what to do."""


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a plain name (``[A-Za-z0-9._-]``, not ``.`` or ``..``), else :class:`RunError`.

    >>> check_run_id("nightly-v3")
    'nightly-v3'
    """
    if not RUN_ID.match(run_id or "") or run_id in (".", ".."):
        raise RunError(
            f"--run-id {run_id!r}: a run id is a name made of letters, digits, '.', '_' and '-' "
            "(no '/' or '..'); choose another, and use --runs-dir to choose the folder"
        )
    return run_id


def new_run_id(suite: str, model: str, now: float | None = None) -> str:
    """A sortable, readable run id: ``20260301-101502-livestream-oracle``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    slug = re.sub(r"[^A-Za-z0-9]+", "-", model.split("/")[-1].split(":")[-1]).strip("-").lower()[:32] or "model"
    return f"{stamp}-{suite}-{slug}"


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of the secret environment variables (``*_API_KEY``, ``*TOKEN*``, ...), longest
    first; short values (under 8 characters) are not treated as secrets."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_ENV.search(k) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


def scrub(obj: Any, secrets: list[str] | None = None) -> Any:
    """A copy of ``obj`` without secrets: the value of a key named like a secret (``api_key``,
    ``token``...: the whole name, never a part of it) and any text holding the value of a secret
    environment variable become ``<redacted>``. Settings keep their types.

    >>> scrub({"api_key": "sk-1", "max_tokens": 48}, secrets=[])
    {'api_key': '<redacted>', 'max_tokens': 48}
    """
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, dict):
        return {
            k: (REDACTED if str(k).lower().replace("-", "_") in SECRET_KEYS else scrub(v, secrets))
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [scrub(v, secrets) for v in obj]
    if isinstance(obj, str):
        for value in secrets:
            if value in obj:
                obj = obj.replace(value, REDACTED)
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
    def create(cls, runs_dir: str | Path, manifest: dict[str, Any], run_id: str | None = None) -> RunStore:
        """A new run folder with its manifest (secrets scrubbed). A taken id gets a suffix."""
        runs_dir = Path(runs_dir)
        if runs_dir.exists() and not runs_dir.is_dir():
            raise RunError(
                f"{runs_dir}: is a file, not a folder for runs; pass --runs-dir with a folder (it is created if missing)"
            )
        if run_id is not None:
            check_run_id(run_id)
        base = run_id or new_run_id(str(manifest.get("suite", "run")), str(manifest.get("model", "model")))
        root, i = runs_dir / base, 1
        while root.exists():
            if run_id is not None:
                raise RunError(
                    f"{root}: a run with this id exists; resume it with --resume {run_id} or choose another --run-id"
                )
            i += 1
            root = runs_dir / f"{base}-{i}"
        root.mkdir(parents=True)  # (new_run_id's slug and check_run_id keep it one level under runs_dir)
        store = cls(root)
        store.write_manifest({**manifest, "run_id": root.name})
        (root / RECORDS).touch()
        return store

    @classmethod
    def open(cls, path: str | Path, runs_dir: str | Path | None = None) -> RunStore:
        """An existing run, by folder path or by id under ``runs_dir``."""
        p = Path(path)
        if not (p / MANIFEST).is_file() and runs_dir is not None and (Path(runs_dir) / str(path) / MANIFEST).is_file():
            p = Path(runs_dir) / str(path)
        if not p.is_dir():
            if runs_dir is not None and Path(runs_dir).exists() and not Path(runs_dir).is_dir():
                raise RunError(
                    f"{runs_dir}: is a file, not a folder of runs; pass --runs-dir with the folder that holds your runs"
                )
            where = f" (looked in {runs_dir})" if runs_dir is not None else ""
            listing = "" if runs_dir is None or Path(runs_dir) == Path("runs") else f" --runs-dir {runs_dir}"
            raise RunError(f"{path}: no such run{where}; list runs with `harnessctl runs{listing}`")
        if not (p / MANIFEST).is_file():
            raise RunError(f"{p}: not a run folder (no {MANIFEST})")
        return cls(p)

    def checked_manifest(self) -> dict[str, Any]:
        """The manifest, refused with what to do when it lacks what a resume needs (a damaged or
        hand-edited file): the model, the plan and the settings."""
        m = self.manifest
        if not isinstance(m, dict):
            raise RunError(f"{self.root / MANIFEST}: not a run manifest (a JSON object expected); start a new run")
        missing = [k for k in ("model", "config", "planned", "case_ids") if not m.get(k)]
        if not missing and not isinstance(m["config"], dict):
            missing = ["config"]
        if missing:
            raise RunError(
                f"{self.root / MANIFEST}: damaged manifest (missing {', '.join(missing)}); it cannot be resumed — "
                f"start a new run (the {RECORDS} already there still read with `harnessctl report`)"
            )
        return m

    # -- manifest and summary ---------------------------------------------------------------
    @property
    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / MANIFEST).read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise RunError(f"{self.root / MANIFEST}:{e.lineno}: not valid JSON ({e.msg})") from None

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write(
            self.root / MANIFEST, json.dumps(scrub(manifest), indent=2, ensure_ascii=False, default=str) + "\n"
        )

    def write_summary(self, summary: dict[str, Any]) -> Path:
        path = self.root / SUMMARY
        atomic_write(path, json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
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

    def results(self, *, every_line: bool = False) -> list[CaseResult]:
        """The result of each (suite, case, repeat), in the order first written. A case that a
        resume ran again (it had failed) has several lines: the last one counts, unless
        ``every_line``. A torn last line is skipped; a damaged line elsewhere is an error naming
        the file and line."""
        path = self.root / RECORDS
        if not path.is_file():
            return []

        def damaged(where: str, e: Exception) -> RunError:
            return RunError(f"{where}: damaged record ({e}); delete that line and resume the run")

        out: list[CaseResult] = []
        # a write cut short by a kill is left out: the case runs again on resume
        for lineno, d in read_jsonl(path, damaged, torn_tail=True):
            try:
                out.append(CaseResult.from_dict(d))
            except TypeError as e:
                raise damaged(f"{path}:{lineno}", e) from None
        if every_line:
            return out
        latest: dict[tuple[str, str, int], CaseResult] = {}
        for r in out:
            latest.pop(r.key, None)  # re-inserted: the order follows the line that counts
            latest[r.key] = r
        return list(latest.values())

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


def list_runs(runs_dir: str | Path = "runs") -> list[dict[str, Any]]:
    """One plain row per run folder under ``runs_dir``, newest first: id, model, suites, overall
    and per-suite scores, errors, whether every planned case has a result, and a ``problem``
    for a folder whose manifest or records cannot be read.

    >>> list_runs("/nonexistent")
    []
    """
    runs_dir = Path(runs_dir)
    if runs_dir.exists() and not runs_dir.is_dir():
        raise RunError(
            f"{runs_dir}: is a file, not a folder of runs; pass --runs-dir with the folder that holds your runs"
        )
    rows: list[dict[str, Any]] = []
    if not runs_dir.is_dir():
        return rows
    for folder in sorted(
        (p for p in runs_dir.iterdir() if (p / MANIFEST).is_file()), key=lambda p: p.stat().st_mtime, reverse=True
    ):
        store = RunStore(folder)
        row: dict[str, Any] = {"run_id": folder.name, "path": str(folder)}
        try:
            manifest = store.manifest
            if not isinstance(manifest, dict):
                raise RunError(f"{folder / MANIFEST}: not a JSON object")
            summary = summarize(store.results(), manifest)
        except RunError as e:
            rows.append({**row, "problem": str(e)})
            continue
        row.update(
            model=manifest.get("model"),
            model_label=summary.get("model_label"),
            created=manifest.get("created"),
            suites=list((manifest.get("planned") or {}).keys()),
            complete=summary["complete"],
            overall=summary["overall"]["score"],
            scores={k: v["score"] for k, v in summary["suites"].items()},
            errors=sum(v["errors"] for v in summary["suites"].values()),
            results=sum(v["n_results"] for v in summary["suites"].values()),
            planned=sum((manifest.get("planned") or {}).values()),
        )
        rows.append(row)
    return rows
