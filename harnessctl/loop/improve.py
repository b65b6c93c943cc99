"""The improvement loop: diagnose → propose → evaluate on the failing slice → on all suites →
keep an edit only if it wins without a regression → repeat, within a budget of candidates.

The model never changes; only the harness does. Everything lives under ``loops/<id>/``:
``loop.json`` (the settings), ``journal.jsonl`` (every finished step, see
:mod:`harnessctl.loop.journal`), ``harness/`` (the starting harness and each candidate as a
folder), ``runs/`` (ordinary run folders: ``compare``, ``report`` and ``diagnose`` read them).
Run the same loop id again to resume it after an interrupt.

A candidate is kept when, against the current best:

- on the failing slice (the cases the best harness fails) it raises the score or turns a
  failure into a pass, and
- on all suites no suite drops by more than ``threshold`` points (the ``compare`` rules) and
  the mean suite score rises.

>>> result = run_loop(LoopConfig(model="local:.harnessctl/models/tiny", harness_dir="harnesses/livecommerce", budget=3))  # doctest: +SKIP
>>> [row["kept"] for row in result.rows]                                                                                # doctest: +SKIP
[False, True, False]
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from harnessctl.eval.compare import compare_results
from harnessctl.harness import load_harness
from harnessctl.progress import prefixed

from .apply import AppliedEdit, commit_edit
from .diagnose import diagnose_results, load_run_items
from .edits import Proposal, apply_edit, write_candidate
from .evaluate import LoopRun, evaluate_items, open_run, standard_items
from .journal import Journal
from .propose import propose_llm, propose_rules
from .stale import FormerNameIndex

CONFIG = "loop.json"
Progress = Callable[[str, int, int], None]


@dataclass
class LoopConfig:
    """What a loop does (saved in ``loop.json``; a resumed loop reads it back)."""

    model: str
    harness_dir: str
    budget: int = 3  # candidate edits evaluated, at most
    api_base: str | None = None
    suites: list[str] = field(default_factory=lambda: ["livestream", "robustness"])
    limit: int | None = 6
    threshold: float = 1.0
    proposer: str | None = None  # an LLM (litellm string) proposing edits beside the rules
    proposer_api_base: str | None = None
    proposals_per_round: int = 3
    jobs: int = 2
    evals_dir: str = "evals"
    loops_dir: str = "loops"
    cache: bool = True
    max_tokens: int = 256

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError(f"--budget must be at least 1, got {self.budget}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {self.limit}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoopConfig:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class LoopResult:
    loop_id: str
    folder: str
    baseline: dict[str, float]
    final: dict[str, float]
    best_harness: str
    rows: list[dict[str, Any]]
    stopped: str
    kept: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def new_loop_id(now: float | None = None) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))


def open_loop_config(loop_id: str, loops_dir: str | Path = "loops") -> LoopConfig:
    """The settings of an existing loop (to resume it).

    >>> open_loop_config("20261203-101500").budget   # doctest: +SKIP
    """
    path = Path(loops_dir) / loop_id / CONFIG
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such loop; start one with `harnessctl loop --model ...`")
    return LoopConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))


def commit_best(config: LoopConfig, result: LoopResult) -> AppliedEdit | None:
    """Commit a finished loop's best harness over ``config.harness_dir`` on the branch
    ``harness-loop/<loop id>`` (see :func:`~harnessctl.loop.apply.commit_edit`), its message naming
    the kept edits; ``None`` when the loop kept none (nothing to commit).

    >>> applied = commit_best(config, run_loop(config, loop_id="l1"))   # doctest: +SKIP
    >>> applied.branch                                                  # doctest: +SKIP
    'harness-loop/l1'
    """
    if not result.kept:
        return None

    return commit_edit(
        config.harness_dir,
        load_harness(result.best_harness),
        branch=f"harness-loop/{result.loop_id}",
        message=f"loop {result.loop_id}: " + "; ".join(r["proposal"] for r in result.kept),
    )


def run_loop(
    config: LoopConfig,
    *,
    loop_id: str | None = None,
    backend: Any | None = None,
    progress: Progress | None = None,
    on_step: Callable[[str, dict[str, Any]], None] | None = None,
    stop_after: int | None = None,
) -> LoopResult:
    """Run (or resume, when ``loop_id`` names an existing loop) the improvement loop.

    ``on_step(name, payload)`` is told each step as it finishes; ``stop_after`` stops the loop
    after that many new steps (:class:`~harnessctl.loop.journal.LoopInterrupted`).

    >>> run_loop(LoopConfig(model="openai/mia", harness_dir="harnesses/livecommerce", budget=5)).final   # doctest: +SKIP
    """
    loop_id = loop_id or new_loop_id()
    folder = Path(config.loops_dir) / loop_id
    folder.mkdir(parents=True, exist_ok=True)
    cfg_path = folder / CONFIG
    if cfg_path.is_file():
        saved = LoopConfig.from_dict(json.loads(cfg_path.read_text(encoding="utf-8")))
        if saved.to_dict() != config.to_dict():
            raise ValueError(
                f"loop {loop_id} was started with other settings ({cfg_path}); resume it with the same ones or start a new loop"
            )
    else:
        cfg_path.write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
    journal = Journal(folder, stop_after=stop_after)
    runs_dir = folder / "runs"
    base_dir = folder / "harness" / "c0"
    if not base_dir.is_dir():
        tmp = folder / "harness" / ".c0.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(config.harness_dir, tmp)
        tmp.rename(base_dir)
    items = standard_items(config.suites, config.evals_dir, config.limit)

    def evaluate(sel: dict[str, list[Any]], harness_path: Path, run_id: str) -> LoopRun:
        return evaluate_items(
            sel,
            model=config.model,
            api_base=config.api_base,
            backend=backend,
            harness_path=harness_path,
            runs_dir=runs_dir,
            run_id=run_id,
            jobs=config.jobs,
            cache=config.cache,
            evals_dir=config.evals_dir,
            max_tokens=config.max_tokens,
            progress=prefixed(progress, run_id),
        )

    def step(name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        fresh = journal.done(name) is None
        data = journal.step(name, run)
        if on_step and fresh:
            on_step(name, data)
        return data

    baseline = step("baseline", lambda: _run_payload(evaluate(items, base_dir, "baseline"), "c0"))
    best = {"candidate": "c0", "run": baseline["run"], "scores": baseline["scores"]}
    rows: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    n = 0
    round_no = 0
    stopped = "budget spent"
    while n < config.budget:
        round_no += 1
        best_dir = folder / "harness" / best["candidate"]
        best_run = open_run(best["run"], runs_dir)
        harness = load_harness(best_dir)
        diag_payload = step(f"r{round_no}.diagnose", partial(_diagnose, best_run, harness, config))
        if not diag_payload["failed"]:
            stopped = "no failures left"
            break
        proposals = [
            Proposal.from_dict(p)
            for p in step(f"r{round_no}.propose", partial(_propose, best_run, harness, best_dir, config))["proposals"]
        ]
        if not proposals:
            stopped = "no proposal for the remaining failures"
            break
        won = False
        failing = {tuple(k) for k in diag_payload["failed"]}
        slice_items = {s: [i for i in v if (s, i.id) in failing] for s, v in items.items()}
        for proposal in proposals:
            if n >= config.budget:
                break
            n += 1
            cid = f"c{n}"
            cand_dir = folder / "harness" / cid
            if not cand_dir.is_dir():
                write_candidate(apply_edit(harness, proposal.ops), cand_dir, best_dir)
            before_slice = [r for r in best_run.results if (r.suite, r.case_id) in failing]
            sl = step(
                f"{cid}.slice", partial(_slice, partial(evaluate, slice_items, cand_dir, f"{cid}-slice"), before_slice)
            )
            full = None
            if sl["win"]:
                full = step(
                    f"{cid}.full",
                    partial(_full, partial(evaluate, items, cand_dir, f"{cid}-all"), best_run, config.threshold),
                )
            keep = bool(full and full["improved"] and not full["regression"])
            reason = (
                "kept: wins on the failing slice and on all suites without a regression"
                if keep
                else "no gain on the failing slice"
                if not sl["win"]
                else "regression on " + ", ".join(full["regressed"])
                if full and full["regression"]
                else "no gain over all suites"
            )
            row = {
                "candidate": cid,
                "parent": best["candidate"],
                "proposal": proposal.title,
                "source": proposal.source,
                "targets": proposal.targets,
                "ops": proposal.ops,
                "slice": sl,
                "before": best["scores"],
                "after": full["scores"] if full else None,
                "kept": keep,
                "reason": reason,
            }
            step(f"{cid}.decision", lambda row=row: row)
            rows.append(row)
            if keep:
                kept.append(row)
                best = {"candidate": cid, "run": full["run"], "scores": full["scores"]}
                won = True
                break
        if not won and n < config.budget:
            stopped = "no proposal won"
            break
    final_dir = folder / "harness" / best["candidate"]
    end = step("end", lambda: {"best": best, "stopped": stopped, "kept": [r["candidate"] for r in kept]})
    return LoopResult(
        loop_id=loop_id,
        folder=str(folder),
        baseline=baseline["scores"],
        final=end["best"]["scores"],
        best_harness=str(final_dir),
        rows=rows,
        stopped=end["stopped"],
        kept=kept,
    )


def _run_payload(run: LoopRun, candidate: str) -> dict[str, Any]:
    return {"candidate": candidate, "run": run.run_id, "scores": run.scores(), "n": len(run.results)}


def _diagnose(run: LoopRun, harness: Any, config: LoopConfig) -> dict[str, Any]:
    d = _diagnosis(run, harness, config)
    return {
        "run": run.run_id,
        "score": d.score,
        "failed": [list(k) for k in d.failed],
        "clusters": [{k: v for k, v in c.to_dict().items() if k != "examples"} for c in d.clusters[:8]],
    }


def _diagnosis(run: LoopRun, harness: Any, config: LoopConfig) -> Any:
    items = load_run_items(run.store.root, config.evals_dir, {r.suite for r in run.results})
    return diagnose_results(
        run.results,
        cases={k: item.case for k, item in items.items()},
        harness=harness,
        run_id=run.run_id,
        model=config.model,
        # names from the harness's own versions: a model that still uses last week's names
        former=FormerNameIndex(config.harness_dir, items, config.evals_dir).for_case,
    )


def _propose(run: LoopRun, harness: Any, harness_dir: Path, config: LoopConfig) -> dict[str, Any]:
    d = _diagnosis(run, harness, config)
    proposals = propose_rules(d, harness, harness_dir=harness_dir, limit=config.proposals_per_round)
    rejected: list[Proposal] = []
    if config.proposer:
        valid, rejected = propose_llm(
            d, harness, config.proposer, harness_dir=harness_dir, api_base=config.proposer_api_base
        )
        proposals = valid + proposals
    return {
        "proposals": [p.to_dict() for p in proposals[: config.proposals_per_round]],
        "rejected": [p.to_dict() for p in rejected],
    }


def _slice(evaluate: Callable[[], LoopRun], before: list[Any]) -> dict[str, Any]:
    run = evaluate()
    after = run.results
    cmp = compare_results(before, after, threshold=0.0)
    fixed = sum(len(s.fail_to_pass) for s in cmp.suites.values())
    broke = sum(len(s.pass_to_fail) for s in cmp.suites.values())
    # A case that ended in an error has no score: it is left out of both means, not counted as a 0.
    errored = {r.key for r in (*before, *after) if r.error is not None}
    before_scored = [r for r in before if r.key not in errored]
    after_scored = [r for r in after if r.key not in errored]
    score_before = 100.0 * sum(r.score for r in before_scored) / len(before_scored) if before_scored else 0.0
    score_after = 100.0 * sum(r.score for r in after_scored) / len(after_scored) if after_scored else 0.0
    return {
        "run": run.run_id,
        "cases": len(after),
        "errors": len(errored),
        "score_before": round(score_before, 2),
        "score_after": round(score_after, 2),
        "fail_to_pass": fixed,
        "pass_to_fail": broke,
        "win": (fixed > 0 or score_after > score_before) and score_after >= score_before,
    }


def _full(evaluate: Callable[[], LoopRun], best: LoopRun, threshold: float) -> dict[str, Any]:
    run = evaluate()
    cmp = compare_results(best.results, run.results, threshold=threshold, run_a=best.run_id, run_b=run.run_id)
    before = [d.score_a for d in cmp.suites.values()]
    after = [d.score_b for d in cmp.suites.values()]
    return {
        "run": run.run_id,
        "scores": run.scores(),
        "regression": cmp.regression,
        "regressed": [s for s, d in cmp.suites.items() if d.regression],
        "improved": bool(after) and sum(after) / len(after) > sum(before) / len(before),
        "delta": {s: d.delta.value for s, d in cmp.suites.items()},
    }
