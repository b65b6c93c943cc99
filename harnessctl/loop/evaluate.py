"""Evaluate a harness folder on chosen cases: the loop's and the release gate's runs.

The loop evaluates more than whole named suites: a failing slice of a run, an evolution suite
built on the fly, a candidate harness in a scratch folder. :func:`evaluate_items` plans such a
run folder (its manifest, the case files of suites the runner does not know) and hands the cases
to the eval runner's :func:`~harnessctl.eval.runner.arun_items` — the same cache, retries, error
accounting and summary as ``harnessctl eval`` — so its runs are ordinary run folders: ``compare``,
``report`` and ``diagnose`` read them, and a run stopped half-way resumes with only its missing
(or errored) cases.

Cases that run a version from git history (the variant suite's ``history:`` cases) do not test
the harness under evaluation, and need a git repository beside it: :func:`standard_items`
leaves them out.

>>> items = standard_items(["livestream"], "evals", limit=5)                         # doctest: +SKIP
>>> out = evaluate_items(items, model="oracle", harness_path="harnesses/livecommerce",
...                      runs_dir="runs", run_id="oracle-5")                            # doctest: +SKIP
>>> out.summary["suites"]["livestream"]["score"]                                     # doctest: +SKIP
100.0
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.eval.results import CaseResult
from harnessctl.eval.runner import (
    DEFAULT_CACHE,
    EvalConfig,
    HarnessResolver,
    arun_items,
    build_manifest,
)
from harnessctl.eval.store import RunStore
from harnessctl.eval.suites import (
    AGENT_SUITES,
    SUITES,
    SuiteItem,
    case_from_line,
    load_suite,
    sample,
)
from harnessctl.eval.summary import summarize
from harnessctl.harness.fileio import atomic_write
from harnessctl.sim.jsonl import read_jsonl

Progress = Callable[[str, int, int], None]
RUN_CASES_DIR = "cases"


@dataclass
class LoopRun:
    """A finished (or resumed-to-the-end) run: its folder, its results and its summary."""

    store: RunStore
    results: list[CaseResult]
    summary: dict[str, Any]
    ran: int

    @property
    def run_id(self) -> str:
        return self.store.run_id

    def scores(self) -> dict[str, float]:
        """Score (0-100) per suite."""
        return {s: v["score"] for s, v in self.summary.get("suites", {}).items()}


def _uses_history(spec: Any) -> bool:
    if isinstance(spec, dict):
        return spec.get("kind") == "rev" or any(_uses_history(v) for v in spec.values())
    return False


def standard_items(
    suites: list[str], evals_dir: str | Path = "evals", limit: int | None = None, seed: int = 0
) -> dict[str, list[SuiteItem]]:
    """The agent suites' items, history cases left out, an evenly spread ``limit`` per suite
    (``seed``: which spread sample, see :func:`~harnessctl.eval.suites.sample`).

    >>> {s: len(v) for s, v in standard_items(["livestream"], "evals", limit=4).items()}   # doctest: +SKIP
    {'livestream': 4}
    """
    out: dict[str, list[SuiteItem]] = {}
    for suite in suites:
        if suite not in AGENT_SUITES:
            raise ValueError(f"unknown or non-agent suite {suite!r}: choose from {', '.join(AGENT_SUITES)}")
        items = [i for i in load_suite(suite, evals_dir) if not _uses_history(i.harness)]
        out[suite] = sample(items, limit, seed)
    return out


def read_items(path: str | Path, suite: str) -> list[SuiteItem]:
    """Items of a case file the loop wrote (one compact case per line, as the suites are).

    >>> read_items("runs/r1/cases/evolution.jsonl", "evolution")[0].suite   # doctest: +SKIP
    """

    def damaged(where: str, e: Exception) -> ValueError:
        return ValueError(f"{where}: not a case ({e})")

    items: list[SuiteItem] = []
    for lineno, d in read_jsonl(path, damaged):
        try:
            items.append(SuiteItem(suite, case_from_line(d), d.get("harness")))
        except (TypeError, KeyError, ValueError) as e:
            raise damaged(f"{path}:{lineno}", e) from None
    return items


def write_items(path: str | Path, items: list[SuiteItem]) -> Path:
    """Write items as a case file (the format of ``evals/*.jsonl``).

    >>> write_items("runs/r1/cases/evolution.jsonl", suite.items)   # doctest: +SKIP
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, "".join(i.to_line() + "\n" for i in items))
    return path


def evaluate_items(items: dict[str, list[SuiteItem]], **kwargs: Any) -> LoopRun:
    """Run ``items`` (suite -> items) under the harness folder ``harness_path`` into the run folder
    ``runs_dir/run_id``; if that run exists, only its missing cases run (resume). Suites the eval
    runner does not know (``evolution``) have their cases written into the run folder. Takes the
    keyword arguments of :func:`aevaluate_items`.

    >>> evaluate_items({"livestream": items}, model="oracle", harness_path="h", runs_dir="runs", run_id="r1").scores()   # doctest: +SKIP
    """
    return asyncio.run(aevaluate_items(items, **kwargs))


async def aevaluate_items(
    items: dict[str, list[SuiteItem]],
    *,
    model: str,
    harness_path: str | Path,
    runs_dir: str | Path,
    run_id: str,
    api_base: str | None = None,
    backend: Any | None = None,
    jobs: int = 2,
    cache: bool = True,
    cache_path: str | Path = DEFAULT_CACHE,
    latency_budget_s: float = 15.0,
    max_tokens: int = 256,
    evals_dir: str | Path = "evals",
    progress: Progress | None = None,
) -> LoopRun:
    """Async :func:`evaluate_items`.

    >>> await aevaluate_items({"livestream": items}, model="oracle", harness_path="h", runs_dir="runs", run_id="r1")   # doctest: +SKIP
    """
    items = {s: v for s, v in items.items() if v}
    if not items:
        raise ValueError("no cases to evaluate")
    known = [s for s in items if s in SUITES] or ["livestream"]
    config = EvalConfig(
        suites=known,
        model=model,
        api_base=api_base,
        jobs=jobs,
        cache=cache,
        cache_path=str(cache_path),
        latency_budget_s=latency_budget_s,
        harness_path=str(harness_path),
        evals_dir=str(evals_dir),
        runs_dir=str(runs_dir),
        max_tokens=max_tokens,
    )
    resolver = HarnessResolver(harness_path, evals_dir)  # frozen held-out variants where they fit
    harness = resolver.get(None)
    for v in items.values():
        for item in v:
            resolver.get(item.harness)
    root = Path(runs_dir) / run_id
    if (root / "manifest.json").is_file():
        store = RunStore.open(root)
        planned = store.manifest.get("case_ids") or {}
        if planned != {s: [i.id for i in v] for s, v in items.items()}:
            raise ValueError(f"{root}: holds a run of other cases; remove it or choose another run id")
        store.repair()
    else:
        manifest = build_manifest(config, items, harness, resolver.variant_record())
        manifest["suite"] = "+".join(items)
        store = RunStore.create(runs_dir, manifest, run_id=run_id)
        for suite, v in items.items():
            if suite not in SUITES:
                write_items(store.root / RUN_CASES_DIR / f"{suite}.jsonl", v)
    outcome = await arun_items(config, items, store, backend=backend, progress=progress)
    results = store.results()
    return LoopRun(store=store, results=results, summary=outcome.summary, ran=outcome.ran)


def open_run(run: str | Path, runs_dir: str | Path = "runs") -> LoopRun:
    """An existing run folder as a :class:`LoopRun` (its summary recomputed if missing).

    >>> open_run("baseline", "loops/l1/runs").scores()   # doctest: +SKIP
    """
    store = RunStore.open(run, runs_dir)
    results = store.results()
    summary = store.summary() or summarize(results, store.manifest)
    return LoopRun(store=store, results=results, summary=summary, ran=0)
