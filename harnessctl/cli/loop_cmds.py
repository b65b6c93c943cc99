"""``harnessctl diagnose | edit | loop | release | rollback | bench latency``: the loop from a
failing run to a gated release. Each command calls one function of :mod:`harnessctl.loop` and
prints a rich view or ``--json``. Exit codes: 0 ok, 1 a refused release or a loop/bench that
found a regression or a budget miss, 2 bad input.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from harnessctl.eval.compare import GATES, MIN_WORSE_FOR_INTERVAL
from harnessctl.eval.stats import parse_duration
from harnessctl.eval.suites import AGENT_SUITES
from harnessctl.harness import load_harness
from harnessctl.harness.diff import diff_harnesses
from harnessctl.harness.diff_view import print_diff
from harnessctl.harness.save import save_harness
from harnessctl.loop.edits import EditError, apply_edit, proposal_diff, read_patch
from harnessctl.loop.release import GATE_PER_ELEMENT, GATE_SUITE_CASES, GateConfig
from harnessctl.loop.release import release as do_release
from harnessctl.loop.release import rollback as do_rollback
from harnessctl.models.registry import memorised_surface
from harnessctl.progress import progress_bars
from harnessctl.sim.model_strings import ORACLE_BLIND as ORACLE_BLIND_NAME

from .common import HarnessOpt, JsonOpt, resolve_harness_path
from .output import EXIT_DIFFERENT, CLIError, cli_errors, err, fail, out, print_json

RunsDirOpt = Annotated[Path, typer.Option("--runs-dir", help="Folder that holds run folders.")]
EvalsDirOpt = Annotated[Path, typer.Option("--evals-dir", help="Folder that holds the suite files.")]
ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="The deployed model: oracle, local:<path> or a litellm string (openai/<name>)."),
]
ApiBaseOpt = Annotated[
    str | None, typer.Option("--api-base", help="Endpoint of a served model, e.g. http://127.0.0.1:8000/v1.")
]
SuiteOpt = Annotated[
    str, typer.Option("--suite", "-s", help="Standard suites, a comma list of livestream, variant, robustness.")
]
LimitOpt = Annotated[int, typer.Option("--limit", min=1, help="Cases per standard suite (an evenly spread sample).")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Cases in flight at once.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the model-call cache.")]
ThresholdOpt = Annotated[
    float, typer.Option("--threshold", help="A suite that drops more than this many points is a regression.")
]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Most tokens per model turn.")]

bench_app = typer.Typer(help="Benchmarks against served models.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("diagnose")(diagnose)
    app.command("edit")(edit)
    app.command("patch")(patch)
    app.command("loop")(loop)
    app.command("release")(release)
    app.command("rollback")(rollback)
    app.add_typer(bench_app, name="bench")


def _progress(enabled: bool = True) -> contextlib.AbstractContextManager[Any]:
    """Progress on stderr, one task per key (done/total, rate, time left); yields ``update(key, done, total)``."""
    return progress_bars(enabled=enabled, console=err)


def _suites(text: str) -> list[str]:
    suites = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in suites if s not in AGENT_SUITES]
    if bad or not suites:
        raise CLIError(f"--suite {text!r}: choose from {', '.join(AGENT_SUITES)} (comma-separated)")
    return suites


def _duration(text: str, option: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise CLIError(f"{option}: {e}") from None


# -- diagnose ------------------------------------------------------------------------------------


def diagnose(
    run: Annotated[str, typer.Argument(help="The run (id under --runs-dir, or its folder).")],
    runs_dir: RunsDirOpt = Path("runs"),
    top: Annotated[int, typer.Option("--top", min=1, help="Clusters shown.")] = 10,
    examples: Annotated[int, typer.Option("--examples", min=0, help="Example cases kept per cluster.")] = 3,
    report: Annotated[
        bool, typer.Option("--report", help="Also write the run's HTML report with a diagnosis section.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Cluster a run's failures by kind, score component and harness element, ranked by impact."""
    # lazy: the loop modules a command runs stay off the `harnessctl --help` path
    from harnessctl.loop.report import diagnose_with_report

    with cli_errors(ValueError):
        d, target = diagnose_with_report(run, runs_dir=runs_dir, examples=examples, report=report)
    if as_json:
        print_json(d.to_dict() | ({"report": str(target)} if target else {}))
        return
    _print_diagnosis(d, top, target)


def _print_diagnosis(d: Any, top: int, target: Path | None) -> None:
    """A run's failure clusters as a table (the first ``top``), an example of each of the first
    three, the stale names, and where the report went."""
    out.print(f"[bold]run {d.run_id}[/] · {d.model} · score {d.score:.1f} · {d.n_failed} of {d.n_results} cases failed")
    if not d.clusters:
        out.print("[green]no failures[/]")
        return
    table = Table(title="failure clusters, by impact (score lost)", title_justify="left")
    for col, kw in (
        ("#", {"justify": "right"}),
        ("kind", {}),
        ("component", {}),
        ("element", {"style": "cyan"}),
        ("cases", {"justify": "right"}),
        ("impact", {"justify": "right"}),
        ("confused with", {}),
    ):
        table.add_column(col, overflow="fold", **kw)
    for i, c in enumerate(d.clusters[:top], 1):
        table.add_row(
            str(i),
            c.kind,
            c.component,
            c.element,
            str(c.cases),
            f"{c.impact:.2f}",
            ", ".join(f"{k} ({v})" for k, v in list(c.others.items())[:2]),
        )
    out.print(table)
    for i, c in enumerate(d.clusters[: min(3, top)], 1):
        for e in c.examples[:1]:
            out.print(Text.assemble((f"#{i} ", "bold"), (f"{e.suite}/{e.case_id}", "dim"), f" viewer: {e.query[:100]}"))
            out.print(Text(f"   steps: {'; '.join(e.steps) or '(no tool calls)'}"[:300], style="dim"))
            out.print(Text(f"   reply: {e.reply[:120]!r}", style="dim"))
            out.print(Text(f"   expected: {e.expected}"[:300], style="dim"))
    _print_stale_names(d)
    if target:
        out.print(f"report written to [bold]{target}[/]")


def _print_stale_names(d: Any) -> None:
    """The names the model used that its harness no longer has, with what they meant."""
    if not d.stale_names:
        return
    n = len(d.stale_names)
    table = Table(
        title=f"stale names: the model used {n} name{'s' if n != 1 else ''} its harness no longer has",
        title_justify="left",
    )
    for col in ("name", "meant", "from", "now", "calls", "cases"):
        table.add_column(col, overflow="fold", justify="right" if col in ("calls", "cases") else "left")
    for e in d.stale_names:
        table.add_row(
            e["name"], e["element"], e["version"], e["current"] or "(removed)", str(e["calls"]), str(e["cases"])
        )
    out.print(table)
    out.print(
        Text(
            f"The model follows an earlier harness, not this one: `harnessctl edit {d.run_id}` proposes giving a renamed "
            "element its name back; a model trained on varied harnesses (augment --trajectories, train sft) "
            "does not depend on the names.",
            style="dim",
        )
    )


# -- patch ---------------------------------------------------------------------------------------


def patch(
    patch_file: Annotated[
        Path, typer.Argument(help="A YAML file: a list of edit operations (set, move), or {title, ops}.")
    ],
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Apply an edit people decided (a weekly change of names, rules, constraints), written as data.

    The edit is in the loop's patch language: validated as a whole, then written into the harness
    folder, keeping its comments and layout. Nothing is written when any operation is wrong. Commit
    and tag it like any edit (`git commit`, `harnessctl tag`); `harnessctl diff` shows it."""
    with cli_errors(ValueError):
        folder = resolve_harness_path(harness)
        title, ops = read_patch(patch_file)
        before = load_harness(folder)
        try:
            after = apply_edit(before, ops)
        except EditError as e:
            raise CLIError(f"{patch_file}: {e}") from None
        save_harness(after, folder, base=folder)
        d = diff_harnesses(before, after, to_label=f"{before.version or 'the harness'} + {patch_file.name}")
    if as_json:
        print_json({"harness": str(folder), "patch": str(patch_file), "title": title, "ops": len(ops), **d.to_dict()})
        return
    out.print(f"{patch_file}: {len(ops)} operations applied to {folder}" + (f" ({title})" if title else ""))
    print_diff(d, out)


# -- edit ----------------------------------------------------------------------------------------


def edit(
    run: Annotated[str, typer.Argument(help="The failing run to work from (id or folder).")],
    harness: HarnessOpt = None,
    runs_dir: RunsDirOpt = Path("runs"),
    proposer: Annotated[
        str | None,
        typer.Option(
            "--proposer", help="An LLM (litellm string) that proposes edits too, given the diagnosis and the harness."
        ),
    ] = None,
    proposer_api_base: Annotated[
        str | None, typer.Option("--proposer-api-base", help="Endpoint of the proposer when it is served locally.")
    ] = None,
    pick: Annotated[
        int | None, typer.Option("--pick", min=1, help="The proposal to apply (its number). Default: the first.")
    ] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Apply the picked proposal without asking.")] = False,
    branch: Annotated[
        str | None, typer.Option("--branch", help="Branch to commit the edit on (default: harness-edit/<title>).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Most proposals shown.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Propose harness edits for a run's failures; apply one as a commit on a new branch.

    Each edit is validated and shown as a semantic diff; apply one with --apply, or confirm."""
    # lazy: the loop modules a command runs stay off the `harnessctl --help` path
    from harnessctl.loop.apply import commit_proposal
    from harnessctl.loop.propose import propose_edits

    with cli_errors(ValueError):
        folder = resolve_harness_path(harness)
        found = propose_edits(
            run, folder, runs_dir=runs_dir, proposer=proposer, proposer_api_base=proposer_api_base, limit=limit
        )
        proposals = found.proposals
        if pick is not None and pick > len(proposals):
            raise CLIError(f"--pick {pick}: there are {len(proposals)} proposal(s)")
    chosen = proposals[(pick or 1) - 1] if proposals else None
    if not as_json:
        _print_proposals(found)
    applied = None
    if chosen is not None and (
        apply
        or (not as_json and sys.stdin.isatty() and typer.confirm(f"apply {chosen.id} ({chosen.title})?", default=False))
    ):
        with cli_errors(ValueError):
            applied = commit_proposal(folder, found.harness, chosen, branch=branch)
    if as_json:
        picked = chosen.id if applied and chosen else None
        print_json(found.to_dict() | {"applied": applied.to_dict() if applied else None, "picked": picked})
        return
    if applied:
        out.print(
            f"[green]applied {chosen.id if chosen else ''}[/] on branch [bold]{applied.branch}[/] (commit {applied.commit[:7]}, "
            f"{len(applied.files)} file(s)); gate it with `harnessctl release vN --gate --model ...`"
        )
    elif proposals:
        out.print("[dim]nothing applied: pass --apply (and --pick N) to commit one on a branch[/]")


def _print_proposals(found: Any) -> None:
    """A run's edit proposals, each with why, its targets and its diff; then the rejected ones."""
    d = found.diagnosis
    out.print(
        f"[bold]run {d.run_id}[/]: {d.n_failed} failed cases, {len(d.clusters)} clusters → {len(found.proposals)} proposal(s)"
    )
    for p in found.proposals:
        out.print(
            Text.assemble(
                (f"\n{p.id} ", "bold"), (p.title, "bold cyan"), (f"  [{p.source}, impact {p.impact:.2f}]", "dim")
            )
        )
        out.print(Text(f"   why: {p.rationale}", style="dim"))
        out.print(Text(f"   targets: {', '.join(p.targets)}", style="dim"))
        hd = proposal_diff(p)
        if hd is not None:
            print_diff(hd, out)
    for p in found.rejected:
        out.print(Text(f"rejected ({p.source}): {p.title}: {'; '.join(p.issues)}", style="yellow"))


# -- loop ----------------------------------------------------------------------------------------


def loop(
    model: ModelOpt,
    budget: Annotated[int, typer.Option("--budget", min=1, help="Candidate edits to evaluate, at most.")] = 3,
    harness: HarnessOpt = None,
    api_base: ApiBaseOpt = None,
    suite: SuiteOpt = "livestream,robustness",
    limit: LimitOpt = 6,
    threshold: ThresholdOpt = 1.0,
    proposer: Annotated[
        str | None, typer.Option("--proposer", help="An LLM (litellm string) proposing edits beside the rules.")
    ] = None,
    proposer_api_base: Annotated[
        str | None, typer.Option("--proposer-api-base", help="Endpoint of the proposer when it is served locally.")
    ] = None,
    loop_id: Annotated[str | None, typer.Option("--loop-id", help="Name the loop; an existing one resumes.")] = None,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Resume the loop with this id, with its own settings.")
    ] = None,
    loops_dir: Annotated[Path, typer.Option("--loops-dir", help="Folder that holds loop folders.")] = Path("loops"),
    evals_dir: EvalsDirOpt = Path("evals"),
    jobs: JobsOpt = 2,
    no_cache: NoCacheOpt = False,
    apply: Annotated[bool, typer.Option("--apply", help="Commit the best harness on a branch at the end.")] = False,
    max_tokens: MaxTokensOpt = 256,
    as_json: JsonOpt = False,
) -> None:
    """Diagnose → propose → evaluate → keep an edit only if it wins; repeat within --budget.

    Each edit is evaluated on the failing slice, then on all suites, and kept only without a
    regression. Journaled and resumable."""
    # lazy: the loop modules a command runs stay off the `harnessctl --help` path
    from harnessctl.loop.improve import LoopConfig, commit_best, new_loop_id, open_loop_config, run_loop

    with cli_errors(ValueError):
        if resume:
            config = open_loop_config(resume, loops_dir)
            loop_id = resume
        else:
            config = LoopConfig(
                model=model,
                harness_dir=str(resolve_harness_path(harness)),
                budget=budget,
                api_base=api_base,
                suites=_suites(suite),
                limit=limit,
                threshold=threshold,
                proposer=proposer,
                proposer_api_base=proposer_api_base,
                jobs=jobs,
                evals_dir=str(evals_dir),
                loops_dir=str(loops_dir),
                cache=not no_cache,
                max_tokens=max_tokens,
            )
            loop_id = loop_id or new_loop_id()
        on_step = _step_printer(not as_json)
        with _progress(not as_json) as progress:
            try:
                result = run_loop(config, loop_id=loop_id, progress=progress, on_step=on_step)
            except KeyboardInterrupt:
                raise CLIError(
                    f"interrupted; resume with `harnessctl loop --model {config.model} --resume {loop_id} --loops-dir {loops_dir}`",
                    code=130,
                ) from None
        applied = commit_best(config, result) if apply else None
    if as_json:
        reference = memorised_surface(config.model)
        print_json(result.to_dict() | {"applied": applied.to_dict() if applied else None, "reference": reference})
        return
    _print_loop(result, config.model, applied)


def _step_printer(enabled: bool) -> Any:
    """``on_step`` for :func:`~harnessctl.loop.improve.run_loop`: each finished step on stderr, with
    the seconds since this was made (and the step's reason, if it has one); silent unless ``enabled``."""
    started = time.perf_counter()

    def on_step(name: str, data: dict[str, Any]) -> None:
        if enabled:
            err.print(
                f"[dim]{time.perf_counter() - started:7.1f}s[/] {name}"
                + (f": {data.get('reason')}" if "reason" in data else "")
            )

    return on_step


def _print_loop(result: Any, model: str, applied: Any) -> None:
    """A loop's candidates as a table (each suite before → after), its model, and its outcome."""
    table = Table(title=f"loop {result.loop_id} — {result.stopped}", title_justify="left")
    for col in (
        "cand.",
        "edit",
        "targeted failures",
        "slice before→after",
        *[f"{s} before→after" for s in result.baseline],
        "kept",
    ):
        table.add_column(col, overflow="fold")
    for row in result.rows:
        sl = row["slice"]
        cells = [
            f"{row['before'].get(s, 0):.1f}→{row['after'][s]:.1f}" if row["after"] else "—" for s in result.baseline
        ]
        table.add_row(
            row["candidate"],
            row["proposal"],
            ", ".join(row["targets"]),
            f"{sl['score_before']:.1f}→{sl['score_after']:.1f}",
            *cells,
            "[green]yes[/]" if row["kept"] else f"[red]no[/] ({row['reason']})",
        )
    out.print(table)
    reference = memorised_surface(model)
    if reference:
        out.print(f"model {model} memorising {reference['label']}")
    out.print(
        "baseline "
        + ", ".join(f"{s} {v:.1f}" for s, v in result.baseline.items())
        + " → final "
        + ", ".join(f"{s} {v:.1f}" for s, v in result.final.items())
        + f"; best harness in {result.best_harness}"
    )
    if applied:
        out.print(f"[green]committed[/] on branch [bold]{applied.branch}[/] ({applied.commit[:7]})")


# -- release and rollback ---------------------------------------------------------------------------


def release(
    ctx: typer.Context,
    version: Annotated[str, typer.Argument(help="The version to release, e.g. v4.")],
    gate: Annotated[
        bool,
        typer.Option(
            "--gate/--no-gate", help="Evaluate before releasing (the evolution suite, the standard suites, latency)."
        ),
    ] = True,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="The deployed model (needed with --gate). oracle-blind stands for a model trained under "
            "production: it memorises production's surface; oracle-blind@REV memorises that version, tag or commit.",
        ),
    ] = None,
    harness: HarnessOpt = None,
    api_base: ApiBaseOpt = None,
    production: Annotated[
        str | None,
        typer.Option("--production", help="Compare against this version or revision instead of the production ref."),
    ] = None,
    suite: SuiteOpt = "livestream,robustness",
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            min=1,
            help=f"Cases per standard suite (an evenly spread sample; default {GATE_SUITE_CASES}: a change that "
            f"breaks one intent in fifteen still gives the interval rule its {MIN_WORSE_FOR_INTERVAL} worse cases).",
        ),
    ] = GATE_SUITE_CASES,
    per_element: Annotated[
        int,
        typer.Option(
            "--per-element",
            min=1,
            help=f"Evolution cases per changed element (default {GATE_PER_ELEMENT}: half of them broken still gives "
            f"the interval rule its {MIN_WORSE_FOR_INTERVAL} worse cases).",
        ),
    ] = GATE_PER_ELEMENT,
    threshold: ThresholdOpt = 1.0,
    regression_rule: Annotated[
        str,
        typer.Option(
            "--regression-rule",
            help="What must lie beyond --threshold to refuse: 'interval' (the drop's whole 95% interval, as "
            f"`compare --gate interval`; it needs at least {MIN_WORSE_FOR_INTERVAL} paired cases that got worse in "
            "a suite) or 'point' (the drop's estimate).",
        ),
    ] = "interval",
    seed: Annotated[
        int, typer.Option("--seed", help="Which evenly spread sample of cases the gate draws (0: the first).")
    ] = 0,
    latency_budget: Annotated[
        str, typer.Option("--latency-budget", help="P95 reply latency budget, e.g. 15s.")
    ] = "15s",
    message: Annotated[str, typer.Option("--message", "-M", help="Tag message.")] = "",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Run the gate only: no tag, no pointer, no note (for pull requests).")
    ] = False,
    notes_dir: Annotated[Path, typer.Option("--notes-dir", help="Folder for release notes.")] = Path("releases"),
    runs_dir: RunsDirOpt = Path("runs"),
    evals_dir: EvalsDirOpt = Path("evals"),
    jobs: JobsOpt = 2,
    no_cache: NoCacheOpt = False,
    max_tokens: MaxTokensOpt = 256,
    as_json: JsonOpt = False,
) -> None:
    """Gate a harness version and release it: tag it, move the production ref, write the note.

    Exit 1 (nothing changed) on a regression or a latency budget miss."""
    if regression_rule not in GATES:
        fail(f"--regression-rule: expected one of {', '.join(GATES)}, got {regression_rule!r}")
    with cli_errors(ValueError):
        folder = resolve_harness_path(harness)
        cfg = _gate_config(ctx.params) if gate else None
        with _progress(not as_json and gate) as progress:
            result = do_release(
                folder,
                version,
                gate=cfg,
                production=production,
                message=message,
                notes_dir=notes_dir,
                progress=progress,
                dry_run=dry_run,
            )
    if as_json:
        print_json(result.to_dict())
    else:
        _print_release(result)
    if not result.passed:
        raise typer.Exit(EXIT_DIFFERENT)


def _gate_config(p: dict[str, Any]) -> Any:
    """The gate ``release --gate`` runs, from the command's parsed options (``ctx.params``)."""
    if not p["model"]:
        raise CLIError("--gate needs --model: the deployed model the gate evaluates (or pass --no-gate)")
    return GateConfig(
        model=p["model"],
        api_base=p["api_base"],
        suites=_suites(p["suite"]),
        limit=p["limit"],
        per_element=p["per_element"],
        threshold=p["threshold"],
        regression_rule=p["regression_rule"],
        seed=p["seed"],
        latency_budget_s=_duration(p["latency_budget"], "--latency-budget"),
        jobs=p["jobs"],
        runs_dir=str(p["runs_dir"]),
        evals_dir=str(p["evals_dir"]),
        cache=not p["no_cache"],
        max_tokens=p["max_tokens"],
    )


def _print_release(r: Any) -> None:
    if r.reference:
        out.print(f"model {ORACLE_BLIND_NAME} memorising {r.reference['label']}")
    if r.evolution:
        ev = r.evolution
        out.print(f"evolution suite: {ev['cases']} cases over {len(ev['coverage'])} changed element(s)")
        for path, ids in ev["coverage"].items():
            out.print(Text(f"  {path}: {len(ids)} case(s)", style="dim"))
        for path, why in ev["uncovered"].items():
            out.print(Text(f"  {path}: not exercised ({why})", style="yellow"))
    if r.comparison:
        title = f"{r.production_label} → {r.version} · {r.comparison['gate']} rule"
        table = Table(title=title, title_justify="left")
        for col in ("suite", "production", "candidate", "delta", "95% interval", "n", "pass→fail"):
            table.add_column(col, justify="right" if col not in ("suite",) else "left")
        for s, d in r.comparison["suites"].items():
            style = "red" if d["regression"] else ""
            iv = d["delta"]
            table.add_row(
                s,
                f"{d['score_a']:.1f}",
                f"{d['score_b']:.1f}",
                Text(f"{iv['value']:+.1f}", style=style),
                f"[{iv['low']:+.1f}, {iv['high']:+.1f}]" if d["n_paired"] > 1 else "one case",
                str(d["n_paired"]),
                str(len(d["pass_to_fail"])),
            )
        out.print(table)
    if r.latency:
        lat = r.latency
        out.print(
            f"latency per reply: P50 {lat['p50']:.2f}s · P95 {lat['p95']:.2f}s · P99 {lat['p99']:.2f}s (budget {lat['budget_s']:g}s)"
        )
    if not r.passed:
        out.print(f"[bold red]release {r.version} refused[/] — nothing was tagged or moved:")
        for reason in r.reasons:
            out.print(Text(f"  {reason}"))
        return
    if r.dry_run:
        out.print(f"[bold green]gate passed[/] for {r.version} (dry run: nothing tagged or moved)")
        return
    out.print(
        f"[bold green]released {r.version}[/] (tag {r.tag}, commit {str(r.tagged_commit)[:7]}); {r.pointer} → {r.version}; note: {r.note}"
    )


def rollback(
    to: Annotated[
        str | None,
        typer.Option(
            "--to", help="Version or revision to put in production (default: where it was before the last release)."
        ),
    ] = None,
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move the production ref back to the previous release (or to --to)."""
    with cli_errors(ValueError):
        r = do_rollback(resolve_harness_path(harness), to)
    if as_json:
        print_json(r.__dict__)
        return
    out.print(f"{r.pointer}: {r.from_commit[:7]} → {r.to_label} ({r.to_commit[:7]})")


# -- bench ---------------------------------------------------------------------------------------


@bench_app.command("latency")
def bench_latency_cmd(
    model: ModelOpt,
    api_base: ApiBaseOpt = None,
    concurrency: Annotated[
        str, typer.Option("--concurrency", "-c", help="Requests in flight, a comma list, e.g. 1,4,16.")
    ] = "1,4,16",
    requests: Annotated[
        int | None, typer.Option("--requests", "-n", min=1, help="Requests per concurrency level (default max(2c, 8)).")
    ] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Most tokens per reply.")] = 128,
    temperature: Annotated[
        float, typer.Option("--temperature", min=0.0, max=2.0, help="Sampling temperature (latency depends on it).")
    ] = 0.0,
    seed: Annotated[int | None, typer.Option("--seed", help="Sampling seed sent with each request.")] = None,
    latency_budget: Annotated[str, typer.Option("--latency-budget", help="Reply latency budget, e.g. 15s.")] = "15s",
    harness: HarnessOpt = None,
    evals_dir: EvalsDirOpt = Path("evals"),
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the endpoint's API key.")
    ] = None,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Do not stream (no time to first token).")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the results as a self-contained HTML page.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Per-reply latency against a served model, at each concurrency.

    Reports P50/P95/P99, time to first token, tokens/s and the share over budget. Exit 1 when P95 is over the budget at any level."""
    import os

    # lazy: the latency bench stays off the `harnessctl --help` path
    from harnessctl.loop.bench import bench_harness, parse_concurrency

    with cli_errors(ValueError):
        levels = parse_concurrency(concurrency)
        budget = _duration(latency_budget, "--latency-budget")
        key = None
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                raise CLIError(f"environment variable {api_key_env} is not set (it should hold the API key)")
        folder = resolve_harness_path(harness)
        with _progress(not as_json) as progress:
            result = bench_harness(
                model,
                folder,
                evals_dir,
                html=html,
                api_base=api_base,
                api_key=key,
                concurrency=levels,
                per_level=requests,
                budget_s=budget,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                stream=not no_stream,
                progress=progress,
            )
    missed = result.over_budget_at()
    if as_json:
        print_json(result.to_dict() | {"over_budget_at": missed})
    else:
        _print_bench(result, html)
    if missed:
        if not as_json:
            err.print(f"[red]P95 over the {budget:g}s budget at concurrency {', '.join(map(str, missed))}[/]")
        raise typer.Exit(EXIT_DIFFERENT)


def _print_bench(result: Any, html: Path | None) -> None:
    """A latency bench as a table, one row per concurrency, with its note and where the page went."""
    table = Table(title=f"latency — {result.model}", title_justify="left")
    for col in (
        "concurrency",
        "n",
        "errors",
        "P50 s",
        "P95 s",
        "P99 s",
        "TTFT P50 s",
        "tokens/s",
        "over budget",
        "req/s",
    ):
        table.add_column(col, justify="right")
    for lv in result.levels:
        table.add_row(
            str(lv.concurrency),
            str(lv.n),
            str(lv.errors),
            f"{lv.p50:.3f}",
            f"{lv.p95:.3f}",
            f"{lv.p99:.3f}",
            "—" if lv.ttft_p50 is None else f"{lv.ttft_p50:.3f}",
            "—" if lv.tokens_per_s is None else f"{lv.tokens_per_s:.1f}",
            f"{100 * lv.over_budget:.1f}%",
            f"{lv.throughput_rps:.2f}",
        )
    out.print(table)
    if result.note:
        out.print(f"[dim]{result.note}[/]")
    if html:
        out.print(f"HTML written to [bold]{html}[/]")
