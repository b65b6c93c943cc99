"""Write N variant harness folders, each with its manifest, plus an index — resumable.

Layout of ``--out``::

    OUT/index.json                 the spec, the source, and one line per finished variant
    OUT/<variant id>/harness.yaml  ... a full harness folder (valid under `harnessctl validate`)
    OUT/<variant id>/manifest.json how it was made and its surface <-> key map

Variant folders are written fresh (tidy YAML, no comments from the source: a source comment may
name an element by its old name or describe an order the variant changed), so the same spec
gives the same bytes. A variant is finished once its ``manifest.json`` exists (written last,
atomically). Rerunning into the same ``--out`` with the same spec and source *resumes*: finished
variants are skipped, unfinished ones rewritten. A different spec or a changed source is refused
unless ``force=True``, which removes the variants this index lists before writing; a folder that
holds other things and no index is never written into.

>>> result = write_variants(load_harness("harnesses/livecommerce"), "out/variants",
...                         VariantSpec(seed=0), n=50)                 # doctest: +SKIP
>>> len(result.written) + len(result.skipped)                         # doctest: +SKIP
50
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.harness.errors import HarnessError, Issue
from harnessctl.harness.fileio import atomic_write
from harnessctl.harness.model import Harness
from harnessctl.harness.save import save_harness

from .feasibility import feasible_floors, harness_fingerprint
from .manifest import MANIFEST_FILE, SourceInfo, read_manifest, source_info, write_manifest
from .paraphrase import Paraphraser
from .paraphrasers import make_paraphraser
from .variants import VariantSpec, iter_variants

INDEX_FILE = "index.json"
INDEX_SCHEMA_VERSION = 1

ProgressFn = Callable[[int, int, str], None]  # (done, total, variant id)


class AugmentOutputError(HarnessError):
    """``--out`` cannot be used as asked (another spec, another source, not an augment folder)."""


@dataclass
class WriteResult:
    """What :func:`write_variants` did."""

    out: str
    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    floors: dict[str, float] = field(default_factory=dict)
    index: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _spec_dict(spec: VariantSpec, source: Harness) -> dict[str, Any]:
    d = asdict(spec)
    d["source_fingerprint"] = harness_fingerprint(source)
    return d


def _index_text(
    spec: dict[str, Any], source: SourceInfo, variants: list[dict[str, Any]], floors: dict[str, float]
) -> str:
    doc = {
        "schema_version": INDEX_SCHEMA_VERSION,
        "spec": spec,
        "source": asdict(source),
        "constraint_floors": floors,
        "variants": variants,
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _prepare_out(out: Path, spec: dict[str, Any], force: bool) -> None:
    index = out / INDEX_FILE
    if not out.exists():
        return
    if not out.is_dir():
        raise AugmentOutputError(Issue(str(out), "exists and is not a folder", hint="choose another --out"))
    if not index.is_file():
        if any(out.iterdir()):
            raise AugmentOutputError(
                Issue(
                    str(out), "folder is not empty and holds no augment index.json", hint="choose a new or empty --out"
                )
            )
        return
    try:
        old = json.loads(index.read_text(encoding="utf-8"))
        old_spec = old["spec"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise AugmentOutputError(
            Issue(str(index), f"unreadable augment index ({e})", hint="choose a new --out")
        ) from None
    if old_spec == spec:
        return
    if not force:
        what = (
            "the source harness changed"
            if old_spec.get("source_fingerprint") != spec["source_fingerprint"]
            else "another spec"
        )
        changed = sorted(k for k in spec if old_spec.get(k) != spec[k] and k != "source_fingerprint")
        detail = f" ({', '.join(changed)} differ)" if changed else ""
        raise AugmentOutputError(
            Issue(
                str(out),
                f"holds variants written with {what}{detail}",
                hint="rerun with the same settings to resume, pass --force to replace them, or choose another --out",
            )
        )
    for entry in old.get("variants", []):
        folder = out / str(entry.get("id", ""))
        if entry.get("id") and folder.is_dir() and folder.parent == out:
            shutil.rmtree(folder)
    index.unlink()


def _finished(folder: Path, variant_id: str) -> bool:
    if not (folder / MANIFEST_FILE).is_file():
        return False
    try:
        return read_manifest(folder).variant_id == variant_id
    except (OSError, ValueError, KeyError, TypeError):
        return False


def ignore_interrupts() -> None:
    """Pool worker initializer: Ctrl-C reaches the whole process group, but only the parent
    should answer it (it stops the pool and reports once); a worker would print its own
    KeyboardInterrupt traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_jobs() -> int:
    """Worker processes for writing variants: the CPUs this process may use, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


@dataclass
class _Job:
    """What a worker needs to make and write one variant (inherited by fork, never pickled)."""

    source: Harness
    spec: VariantSpec
    out: Path
    paraphraser: Paraphraser
    floors: dict[str, float]
    meta: SourceInfo


_JOB: _Job | None = None


def _write_one(index: int) -> str:
    job = _JOB
    assert job is not None

    (variant,) = iter_variants(
        job.source, job.spec, [index], paraphraser=job.paraphraser, constraint_floors=job.floors, source_meta=job.meta
    )
    folder = job.out / variant.id
    if folder.exists():  # an interrupted write of this variant: start it again
        shutil.rmtree(folder)
    save_harness(variant.harness, folder)
    write_manifest(variant.manifest, folder)
    return variant.id


def write_variants(
    source: Harness,
    out: str | Path,
    spec: VariantSpec,
    n: int,
    *,
    force: bool = False,
    paraphraser: Paraphraser | None = None,
    jobs: int | None = None,
    on_progress: ProgressFn | None = None,
) -> WriteResult:
    """Write variants ``0 .. n-1`` of ``spec`` under ``out`` (see the module docstring).

    ``jobs`` worker processes write in parallel (default: the usable CPUs; saving a folder
    validates it and reads it back, which dominates the cost). The bytes do not depend on it.
    Raises :class:`AugmentOutputError` when ``out`` holds something else, and
    :class:`~harnessctl.harness.errors.HarnessError` if a variant would not validate.
    """
    global _JOB
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    out = Path(out)
    spec_d = _spec_dict(spec, source)
    _prepare_out(out, spec_d, force)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(".*"):  # staging folders of a save that was killed
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
    meta = source_info(source)
    floors = feasible_floors(source)
    para = paraphraser or make_paraphraser(spec.paraphraser)
    result = WriteResult(out=str(out), floors=floors, index=str(out / INDEX_FILE))
    # The index goes first (marks the folder as ours, so an interrupted run can resume).
    atomic_write(out / INDEX_FILE, _index_text(spec_d, meta, [], floors))
    todo = [i for i in range(n) if not _finished(out / spec.variant_id(i), spec.variant_id(i))]
    pending = set(todo)
    result.skipped = [spec.variant_id(i) for i in range(n) if i not in pending]
    done = len(result.skipped)
    if on_progress:
        on_progress(done, n, "")
    jobs = default_jobs() if jobs is None else max(1, jobs)
    # A network paraphraser stays in this process (its client and cache are not fork-safe).
    if para.name != "lexicon" or "fork" not in mp.get_all_start_methods():
        jobs = 1
    _JOB = _Job(source, spec, out, para, floors, meta)
    try:
        if jobs == 1 or len(todo) < 4:
            ids = map(_write_one, todo)
            for vid in ids:
                result.written.append(vid)
                done += 1
                if on_progress:
                    on_progress(done, n, vid)
        else:
            with mp.get_context("fork").Pool(min(jobs, len(todo)), initializer=ignore_interrupts) as pool:
                for vid in pool.imap_unordered(_write_one, todo):
                    result.written.append(vid)
                    done += 1
                    if on_progress:
                        on_progress(done, n, vid)
    finally:
        _JOB = None
    result.written.sort()
    entries = []
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and (p / MANIFEST_FILE).is_file()):
        m = read_manifest(folder)
        if m.split != spec.split:
            continue
        entries.append(
            {
                "id": m.variant_id,
                "seed": m.seed,
                "changes": sum(len(op.changes) for op in m.operators),
                "skills": len(m.surface.get("skills", {})),
                "tools": len(m.surface.get("tools", {})),
            }
        )
    atomic_write(out / INDEX_FILE, _index_text(spec_d, meta, entries, floors))
    return result


def load_variant_index(out: str | Path) -> dict[str, Any]:
    """The ``index.json`` of an augment output folder."""
    return json.loads((Path(out) / INDEX_FILE).read_text(encoding="utf-8"))
