"""Release a harness version through a gate: evolution suite, comparison, latency budget.

``release(harness_dir, "v4", gate=GateConfig(model=...))``:

1. the candidate is the harness as committed at HEAD (uncommitted edits refuse the release);
   production is the commit the ``refs/production/<harness name>`` git ref points to (or the
   last version, or ``production=`` when given);
2. the **evolution suite** is built from the semantic diff production → candidate
   (:mod:`harnessctl.loop.evolution`) and joined to the standard suites (an evenly spread
   ``limit`` per suite);
3. the deployed model runs the same cases under production and under the candidate; the two runs
   are compared with the ``compare`` rules (by default the interval rule: a suite whose whole 95 %
   interval lies more than ``threshold`` points down is a regression), and the candidate's P95
   reply latency is checked against the budget (15 s). The harness-blind reference plays the
   deployed model trained under production: a bare ``oracle-blind`` memorises production's
   surface, ``oracle-blind@REV`` that revision's of the gated harness;
4. on a pass: the version is tagged (:meth:`HarnessStore.tag`), the production ref moves to it
   (with a reflog entry, for :func:`rollback`) and a release note is written: the changelog from
   the diff and the eval table with each suite's interval. On a refusal nothing in git changes and
   no note is written — only the two evaluation runs stay on disk, where a second attempt resumes
   them — and the reasons name the changed elements whose cases got worse and those cases.

Sizes. The interval rule can refuse a suite only when at least
:data:`~harnessctl.eval.compare.MIN_WORSE_FOR_INTERVAL` (4) of its paired cases got worse. The
defaults give it room: :data:`GATE_PER_ELEMENT` (8) evolution cases per changed element, so an
edit that breaks half of an element's cases is seen, and :data:`GATE_SUITE_CASES` (60) per
standard suite, so one that breaks one intent of the fifteen is.

>>> result = release("harnesses/livecommerce", "v4", gate=GateConfig(model="openai/tiny", api_base=URL))   # doctest: +SKIP
>>> result.passed, result.pointer                                                                          # doctest: +SKIP
(True, 'refs/production/livecommerce')
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harnessctl.eval.compare import GATES, MIN_WORSE_FOR_INTERVAL, Comparison, compare_results
from harnessctl.eval.stats import latency_stats
from harnessctl.eval.summary import distinct_errors
from harnessctl.harness.diff import HarnessDiff, diff_harnesses, summary_phrases
from harnessctl.harness.errors import Issue
from harnessctl.harness.save import save_harness
from harnessctl.harness.store import HarnessStore, ResolvedHarness, StoreError, is_version_name
from harnessctl.models.registry import memorised_surface
from harnessctl.progress import prefixed
from harnessctl.sim.model_strings import ORACLE_BLIND, blind_parts, is_oracle_blind

from .evaluate import LoopRun, evaluate_items, standard_items
from .evolution import SUITE as EVOLUTION
from .evolution import EvolutionSuite, build_evolution_suite

POINTER_PREFIX = "refs/production/"
DEFAULT_BUDGET_S = 15.0
#: Cases per standard suite: one intent in fifteen broken gives the interval rule its 4 worse cases.
GATE_SUITE_CASES = 15 * MIN_WORSE_FOR_INTERVAL
#: Evolution cases per changed element: half of them broken gives the interval rule its 4.
GATE_PER_ELEMENT = 2 * MIN_WORSE_FOR_INTERVAL
#: Cases a refusal lists per failing element or suite.
SHOWN_CASES = 5


def pointer_name(harness_name: str) -> str:
    """The git ref that names a harness's production version.

    >>> pointer_name("livecommerce")
    'refs/production/livecommerce'
    """
    return f"{POINTER_PREFIX}{harness_name}"


@dataclass
class GateConfig:
    """How a release is gated: the deployed model, the suites and the rules."""

    model: str
    api_base: str | None = None
    suites: list[str] = field(default_factory=lambda: ["livestream", "robustness"])
    limit: int | None = GATE_SUITE_CASES  # cases per standard suite
    per_element: int = GATE_PER_ELEMENT  # evolution cases per changed element
    threshold: float = 1.0  # points a suite may drop before it is a regression
    # "interval": only a drop whose whole 95% interval lies past the threshold fails; "point": the
    # drop's estimate past it (see harnessctl.eval.compare.GATES).
    regression_rule: str = "interval"
    seed: int = 0  # which evenly spread sample of cases (0: the stride's first case)
    latency_budget_s: float = DEFAULT_BUDGET_S
    jobs: int = 2
    runs_dir: str = "runs"
    evals_dir: str = "evals"
    cache: bool = True
    max_tokens: int = 256

    def __post_init__(self) -> None:
        if self.latency_budget_s <= 0:
            raise ValueError("the latency budget must be positive, e.g. --latency-budget 15s")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit must be at least 1, got {self.limit}")
        if self.per_element < 1:
            raise ValueError(f"--per-element must be at least 1, got {self.per_element}")
        if self.regression_rule not in GATES:
            raise ValueError(f"--regression-rule must be one of {', '.join(GATES)}, got {self.regression_rule!r}")


@dataclass
class ReleaseResult:
    """What the release did (or why it refused)."""

    version: str
    harness: str
    candidate: str  # commit evaluated
    production: str | None  # commit of the production version compared against
    production_label: str | None
    passed: bool
    model: str | None = None  # the model the gate ran, as resolved (oracle-blind pinned to a surface)
    reference: dict[str, Any] | None = None  # the surface the harness-blind reference memorised
    reasons: list[str] = field(default_factory=list)
    diff: dict[str, Any] | None = None
    evolution: dict[str, Any] | None = None
    failing: list[dict[str, Any]] = field(default_factory=list)  # {suite, element?, cases, worse}
    comparison: dict[str, Any] | None = None
    latency: dict[str, Any] | None = None
    runs: dict[str, str] = field(default_factory=dict)
    #: Cases that ended in an error (no score), per run ("candidate", "production"); any refuses.
    errors: dict[str, int] = field(default_factory=dict)
    tag: str | None = None
    tagged_commit: str | None = None
    pointer: str | None = None
    note: str | None = None
    gated: bool = True
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def production_commit(store: HarnessStore, harness_name: str) -> str | None:
    """The commit the production ref points to, or None before the first release.

    >>> production_commit(HarnessStore("harnesses/livecommerce"), "livecommerce")   # doctest: +SKIP
    """
    try:
        return store.repo.git.rev_parse("--verify", "-q", pointer_name(harness_name) + "^{commit}").strip() or None
    except Exception:  # noqa: BLE001 - git says "no such ref" with an error status
        return None


def release(
    harness_dir: str | Path,
    version: str,
    *,
    gate: GateConfig | None,
    production: str | None = None,
    message: str = "",
    notes_dir: str | Path = "releases",
    progress: Callable[[str, int, int], None] | None = None,
    backend: Any | None = None,
    dry_run: bool = False,
) -> ReleaseResult:
    """Gate (unless ``gate`` is None), then tag ``version``, move the production ref and write
    the release note (``dry_run``: gate only, nothing written). Raises :class:`StoreError` for a bad version, a dirty folder or an unknown
    production reference (nothing changed); returns ``passed=False`` on a refusal.

    >>> release("harnesses/livecommerce", "v5", gate=GateConfig(model="openai/mia", api_base=url)).passed   # doctest: +SKIP
    """
    store = HarnessStore(harness_dir)
    where = store.rel or "."
    if not is_version_name(version):
        raise StoreError(
            Issue(where, f"{version!r} is not a version name", hint="use v<number> (v4) or a semantic version (1.4.0)")
        )
    if store.find_version(version) is not None:
        raise StoreError(Issue(where, f"version {version} already exists", hint="choose a new version name"))
    dirty = store.repo.git.status(
        "--porcelain", "--untracked-files=all", "--", str(Path(store.repo.working_tree_dir) / store.rel)
    )
    if dirty.strip():
        raise StoreError(
            Issue(
                where,
                "uncommitted changes under the harness folder",
                hint="commit them (the release gates the committed harness)",
            )
        )
    cand = store.resolve("HEAD")
    name = cand.harness.name
    prod_ref = production or (pointer_name(name) if production_commit(store, name) else None)
    if prod_ref is None:
        versions = store.list_versions()
        prod_ref = versions[-1].name if versions else None
    prod = store.resolve(prod_ref) if prod_ref else None
    if prod is not None:  # name the production commit by its version when it has one
        prod_ref = prod.version or next((v.name for v in store.list_versions() if v.commit == prod.commit), prod_ref)
    result = ReleaseResult(
        version=version,
        harness=name,
        candidate=str(cand.commit),
        production=prod.commit if prod else None,
        production_label=prod_ref,
        passed=True,
        gated=gate is not None,
        dry_run=dry_run,
    )
    diff = diff_harnesses(prod.harness, cand.harness, from_label=prod_ref or "", to_label=version) if prod else None
    result.diff = diff.to_dict() if diff else None
    if gate is not None:
        from dataclasses import replace

        gate = replace(gate, model=gate_model(gate.model, store, prod))
        result.model, result.reference = gate.model, memorised_surface(gate.model)
        _gate(result, gate, cand.harness, prod.harness if prod else None, diff, progress, backend)
    if not result.passed or dry_run:
        return result
    tagged = store.tag(version, message or (f"released through the gate against {prod_ref}" if gate and prod else ""))
    result.tag, result.tagged_commit = tagged.tag, tagged.commit
    pointer = pointer_name(name)
    old = production_commit(store, name)
    args = ["--create-reflog", "-m", f"release {version}", pointer, tagged.commit] + ([old] if old else [])
    store.repo.git.update_ref(*args)
    result.pointer = pointer
    result.note = str(write_release_note(result, diff, notes_dir))
    return result


def gate_model(model: str, store: HarnessStore, production: ResolvedHarness | None) -> str:
    """The model string a gate runs. The harness-blind reference stands for the deployed model,
    trained under production, so a bare ``oracle-blind`` memorises production's surface and
    ``oracle-blind@REV`` that revision of the gated harness; any other model, or an
    ``oracle-blind:<folder>``, is run as named.

    >>> gate_model("oracle", store, prod)                        # doctest: +SKIP
    'oracle'
    >>> gate_model("oracle-blind", store, prod)                  # doctest: +SKIP
    'oracle-blind:/repo/harnesses/livecommerce@9f0c2e1...'
    """
    if not is_oracle_blind(model) or model.startswith(ORACLE_BLIND + ":"):
        return model
    _, rev = blind_parts(model)
    if rev is None:
        if production is None or production.commit is None:
            raise StoreError(
                Issue(
                    store.rel or ".",
                    "oracle-blind memorises production's surface, and there is no production version yet",
                    hint=f"name the surface it memorised: --model {ORACLE_BLIND}@v1 (a version, tag or commit)",
                )
            )
        rev = production.version or production.commit  # a version reads better, names the same commit
    folder = Path(str(store.harness_dir)).resolve()
    return f"{ORACLE_BLIND}:{folder}@{rev}"


def _gate(
    result: ReleaseResult,
    gate: GateConfig,
    candidate: Any,
    production: Any | None,
    diff: HarnessDiff | None,
    progress: Callable[[str, int, int], None] | None,
    backend: Any | None,
) -> None:
    items = standard_items(gate.suites, gate.evals_dir, gate.limit, gate.seed)
    evo: EvolutionSuite | None = None
    if diff is not None:
        pool = [i for s in ("livestream", "robustness") for i in standard_items([s], gate.evals_dir, None)[s]]
        evo = build_evolution_suite(diff, pool, per_element=gate.per_element, harness=candidate, seed=gate.seed)
        result.evolution = evo.to_dict()
        if evo.items:
            items[EVOLUTION] = evo.items
    common: dict[str, Any] = {
        "model": gate.model,
        "api_base": gate.api_base,
        "runs_dir": gate.runs_dir,
        "jobs": gate.jobs,
        "cache": gate.cache,
        "latency_budget_s": gate.latency_budget_s,
        "max_tokens": gate.max_tokens,
        "evals_dir": gate.evals_dir,
        "backend": backend,
    }
    # A second attempt resumes its runs; the model and the sample are part of what a run is.
    tag = hashlib.sha1(f"{gate.model}|{gate.seed}".encode()).hexdigest()[:8]
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        cand_dir = _write(candidate, Path(tmp) / "candidate")
        run_c = evaluate_items(
            items,
            harness_path=cand_dir,
            run_id=f"release-{result.version}-{result.candidate[:7]}-{tag}",
            progress=prefixed(progress, "candidate"),
            **common,
        )
        result.runs["candidate"] = str(run_c.store.root)
        cmp: Comparison | None = None
        if production is not None:
            prod_dir = _write(production, Path(tmp) / "production")
            run_p = evaluate_items(
                items,
                harness_path=prod_dir,
                run_id=f"production-{str(result.production)[:7]}-for-{result.version}-{result.candidate[:7]}-{tag}",
                progress=prefixed(progress, "production"),
                **common,
            )
            result.runs["production"] = str(run_p.store.root)
            cmp = compare_results(
                run_p.results,
                run_c.results,
                threshold=gate.threshold,
                run_a=run_p.run_id,
                run_b=run_c.run_id,
                gate=gate.regression_rule,
            )
            result.comparison = cmp.to_dict()
    result.latency = _latency(run_c, gate.latency_budget_s)
    reasons = []
    if cmp is not None and cmp.regression:
        worse = _worse_cases(run_p.results, run_c.results)
        for s, d in cmp.suites.items():
            if d.regression:
                spread = (
                    f"95% interval [{d.delta.low:+.1f}, {d.delta.high:+.1f}]{'' if d.beyond_noise else ', reaching 0'}"
                    if d.has_interval
                    else "one paired case, no interval"
                )
                reasons.append(
                    f"regression on {s}: {d.score_a:.1f} -> {d.score_b:.1f} ({d.delta.value:+.1f} points, {spread}; "
                    f"threshold {gate.threshold:g})"
                )
                result.failing += _failing(s, worse.get(s, {}), d.n_paired, evo if s == EVOLUTION else None)
        for f in result.failing:
            what = f"element {f['element']}" if f.get("element") else f"suite {f['suite']}"
            shown = ", ".join(f["cases"][:SHOWN_CASES]) + (" ..." if len(f["cases"]) > SHOWN_CASES else "")
            reasons.append(f"{what}: {len(f['cases'])} of {f['of']} cases worse ({shown})")
    p95 = result.latency.get("p95")
    if p95 is None or math.isnan(p95):
        reasons.append("no reply latency measured (every case failed to run)")
    elif p95 > gate.latency_budget_s:
        reasons.append(f"latency: P95 {p95:.2f}s is over the {gate.latency_budget_s:g}s budget")
    runs = {"candidate": run_c} | ({"production": run_p} if cmp is not None else {})
    for side, run in runs.items():
        reason = _errored(side, run.results, gate.jobs)
        if reason:
            result.errors[side] = sum(1 for r in run.results if r.error is not None)
            reasons.append(reason)
    result.reasons = reasons
    result.passed = not reasons


def _errored(side: str, results: list[Any], jobs: int) -> str | None:
    """Why the gate gives no verdict on a run whose cases ended in an error (a timeout, a model
    error), or None when every case was scored. An errored case has no score: counted as a low
    one it would refuse a release for the machine's load, left out it would pass one on part of
    the sample, so the gate refuses until every case is scored."""
    errored = [r for r in results if r.error is not None]
    if not errored:
        return None
    seen = "; ".join(f"{e['count']} × {e['error'][:120]}" for e in distinct_errors(errored, limit=2))
    every = len(errored) == len(results)
    timeouts = any(str(r.error).startswith("timeout") for r in errored)
    return (
        f"{'all' if every else len(errored)} of the {len(results)} cases of the {side} run ended in an error "
        f"({seen}) and have no score: the gate gives no verdict until every case is scored. Run the same command "
        "again: the gate's runs resume and run only those cases"
        + (f" (fewer in flight finish sooner: lower -j, now {jobs})" if timeouts else "")
    )


def _worse_cases(production: list[Any], candidate: list[Any]) -> dict[str, dict[str, float]]:
    """Suite -> case id -> points lost, for the paired cases that scored lower under the candidate
    (cases that ended in an error have no score and are not among them)."""
    before = {r.key: r for r in production if r.error is None}
    out: dict[str, dict[str, float]] = {}
    for r in candidate:
        p = before.get(r.key)
        if p is not None and r.error is None and r.score < p.score:
            out.setdefault(r.suite, {})[r.case_id] = round(100.0 * (p.score - r.score), 1)
    return out


def _failing(suite: str, worse: dict[str, float], paired: int, evo: EvolutionSuite | None) -> list[dict[str, Any]]:
    """What a refusal names: for the evolution suite, each changed element with its cases that
    got worse (most points lost first); for a standard suite, its cases that got worse."""
    order = sorted(worse, key=lambda c: (-worse[c], c))
    if evo is None:
        return [{"suite": suite, "element": None, "cases": order, "of": paired}] if order else []
    out = []
    for element, ids in evo.coverage.items():
        hit = [c for c in order if c in set(ids)]
        if hit:
            out.append({"suite": suite, "element": element, "cases": hit, "of": len(ids)})
    return out


def _write(harness: Any, folder: Path) -> Path:
    from dataclasses import replace

    return save_harness(replace(harness, root=None), folder)


def _latency(run: LoopRun, budget_s: float) -> dict[str, Any]:
    live = [r.latency_s for r in run.results if r.error is None and not r.cached]
    cached = not live
    if cached:
        live = [r.latency_s for r in run.results if r.error is None]
    stats = latency_stats(live, budget_s).to_dict()
    stats["from_cache"] = cached
    return stats


def write_release_note(result: ReleaseResult, diff: HarnessDiff | None, notes_dir: str | Path) -> Path:
    """``<notes_dir>/<harness>-<version>.md``: the changelog from the diff and the eval table.

    >>> write_release_note(result, diff, "releases")   # doctest: +SKIP
    """
    folder = Path(notes_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result.harness}-{result.version}.md"
    lines = [
        f"# {result.harness} {result.version}",
        "",
        f"Released {datetime.now(UTC):%Y-%m-%d %H:%M} UTC from commit {result.candidate[:7]}"
        + (
            f", replacing {result.production_label} ({str(result.production)[:7]})."
            if result.production
            else " (first release)."
        ),
        "",
        "## Changes",
        "",
    ]
    if diff is None:
        lines.append("- first version in production")
    elif diff.equal:
        lines.append("- no semantic change")
    else:
        lines += [f"- {p}" for p in summary_phrases(diff.changes)]
        lines += ["", f"Suggested bump: {diff.bump}."]
    lines += ["", "## Gate", ""]
    if not result.gated:
        lines.append("Released without the gate (`--no-gate`).")
    else:
        lines.append(
            f"Model: {result.model}" + (f", memorising {result.reference['label']}." if result.reference else ".")
        )
        lines.append("")
        if result.comparison:
            cmp = result.comparison
            lines += [
                f"Rule: {cmp['gate']}, threshold {cmp['threshold']:g} point{'' if cmp['threshold'] == 1 else 's'}.",
                "",
                "| suite | production | candidate | delta | 95% interval | n |",
                "|---|---:|---:|---:|---:|---:|",
            ]
            for s, d in cmp["suites"].items():
                iv = d["delta"]
                spread = f"[{iv['low']:+.1f}, {iv['high']:+.1f}]" if d["n_paired"] > 1 else "one case"
                lines.append(
                    f"| {s} | {d['score_a']:.1f} | {d['score_b']:.1f} | {iv['value']:+.1f} | {spread} | {d['n_paired']} |"
                )
        if result.evolution:
            lines += [
                "",
                f"Evolution suite: {result.evolution['cases']} cases over {len(result.evolution['coverage'])} changed elements.",
            ]
            for path, why in result.evolution["uncovered"].items():
                lines.append(f"- not exercised: {path} ({why})")
        if result.latency:
            lat = result.latency
            lines += [
                "",
                (
                    f"Latency per reply: P50 {lat['p50']:.2f}s, P95 {lat['p95']:.2f}s, P99 {lat['p99']:.2f}s "
                    f"(budget {lat['budget_s']:g}s, {100 * (lat['over_budget'] or 0):.1f}% over)."
                ),
            ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class Rollback:
    harness: str
    pointer: str
    from_commit: str
    to_commit: str
    to_label: str


def rollback(harness_dir: str | Path, to: str | None = None) -> Rollback:
    """Move the production ref back: to ``to`` (a version or revision) or, by default, to where
    it pointed before the last release (its reflog). Raises :class:`StoreError` when there is
    nothing to roll back to.

    >>> rollback("harnesses/livecommerce").to_label      # doctest: +SKIP
    'v3'
    """
    store = HarnessStore(harness_dir)
    name = store.resolve("HEAD").harness.name
    pointer = pointer_name(name)
    where = store.rel or "."
    current = production_commit(store, name)
    if current is None:
        raise StoreError(
            Issue(
                where,
                f"no production version yet ({pointer} does not exist)",
                hint="release one with `harnessctl release vN --gate`",
            )
        )
    if to is not None:
        target = store.resolve(to)
        commit, label = str(target.commit), target.label
        if target.commit is None:
            raise StoreError(
                Issue(where, f"{to!r} is a folder, not a version or revision", hint="pass a version such as v3")
            )
    else:
        try:
            log = store.repo.git.reflog("show", "--format=%H", pointer).split()
        except Exception:  # noqa: BLE001 - no reflog for the ref
            log = []
        previous = [c for c in log[1:] if c != current]
        if not previous:
            raise StoreError(
                Issue(
                    where, f"{pointer} has no earlier position in this clone's reflog", hint="name the version: --to v3"
                )
            )
        commit = previous[0]
        label = next((v.name for v in store.list_versions() if v.commit == commit), commit[:7])
    if commit == current:
        raise StoreError(Issue(where, f"production already points to {label}", hint="nothing to roll back"))
    store.repo.git.update_ref("--create-reflog", "-m", f"rollback to {label}", pointer, commit, current)
    return Rollback(harness=name, pointer=pointer, from_commit=current, to_commit=commit, to_label=label)
