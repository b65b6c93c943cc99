"""``harnessctl experiment hat``: the HAT study in miniature, a thin layer over
:mod:`harnessctl.experiment` (the trainer is imported only when the study runs)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from .output import CLIError, cli_errors, err, out, print_json

experiment_app = typer.Typer(
    help="Studies that train and compare models: the paper's table in miniature.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(experiment_app, name="experiment")
    experiment_app.command("hat")(hat)


def hat(
    quick: Annotated[
        bool, typer.Option("--quick", help="Smaller everything, same arms (CI runs it: make study-quick).")
    ] = False,
    base: Annotated[
        str,
        typer.Option(
            "--base",
            help="tiny: the 1 M-parameter model trained from scratch (stage 0); smollm2-135m: LoRA adapters on "
            "the pretrained SmolLM2-135M-Instruct (fetch it once with `harnessctl model fetch`), its own preset.",
        ),
    ] = "tiny",
    ablations: Annotated[
        bool, typer.Option("--ablations", help="Add the arms HSA only at RL and HSA only at SFT.")
    ] = False,
    study_id: Annotated[
        str | None, typer.Option("--id", help="Study name: its folder under --out (default: quick or full).")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder of studies.")] = Path("experiments"),
    seed: Annotated[int, typer.Option("--seed", help="Seed of data, initialisation, sampling and evaluation.")] = 0,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="A plan field (eval_limit=20) or a stage's config field (sft.max_steps=50); repeatable."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print results.json on stdout.")] = False,
    train_only: Annotated[
        bool,
        typer.Option(
            "--train-only",
            help="Train every arm not trained yet and stop before evaluating; the same command without it evaluates.",
        ),
    ] = False,
    eval_only: Annotated[
        bool,
        typer.Option(
            "--eval-only",
            help="Evaluate every arm whose training has finished and train nothing (beside a --train-only run).",
        ),
    ] = False,
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm",
            metavar="ARM",
            help="With --train-only: train just this arm (repeatable); its parent must be trained. "
            "Two arms with the same parent can train at once, one command each. With --eval-only: "
            "evaluate just this arm.",
        ),
    ] = None,
    train_jobs: Annotated[
        int,
        typer.Option(
            "--train-jobs",
            min=1,
            help="Arms with a trained parent (fixed-SFT, HSA-SFT) that train at once, one process each, "
            "the cores shared out.",
        ),
    ] = 1,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Train nothing: time a few steps of every phase and a few cases of every evaluation run "
            "on this machine (a few minutes) and project the plan's time against the 90-minute budget.",
        ),
    ] = False,
    replan: Annotated[
        bool,
        typer.Option(
            "--replan",
            help="Continue with changed stage fields (--set distill.max_steps=20) for stages none of whose arms has "
            "started; recorded in the study's plan-changes.jsonl.",
        ),
    ] = False,
) -> None:
    """Run (or continue) the HAT study: base, fixed-SFT, HSA-SFT, HSA-SFT+OPD, HAT.

    Every arm is evaluated on the four suites and the real history; writes results.json, results.md
    and report.html."""
    # lazy: the experiment package stays off the `harnessctl --help` path
    from harnessctl.experiment import hat_study, run_study

    with cli_errors():
        name, plan = hat_study(base, quick=quick, study_id=study_id, seed=seed, ablations=ablations, overrides=set_)
        if estimate:
            if train_only or eval_only or arm:
                raise CLIError("--estimate trains nothing of the study: leave out --train-only, --eval-only and --arm")
            _estimate(plan, as_json)
            return
        results = run_study(
            plan,
            out_dir / name,
            command=_study_command(),
            say=lambda m: err.print(f"[dim]{m}[/]"),
            progress=not as_json,
            train_only=train_only,
            eval_only=eval_only,
            only_arms=arm,
            train_jobs=train_jobs,
            replan=replan,
        )
    if as_json:
        print_json(results)
    elif "waiting" in results:
        out.print(f"evaluated: {', '.join(results['evaluated']) or 'nothing new'}")
        out.print(f"not evaluated yet: {', '.join(results['waiting'])}; rerun --eval-only once they are trained")
    elif train_only:
        trained = ", ".join(results["trained"]) or "nothing (every arm was trained before)"
        out.print(f"trained: {trained}")
        out.print(f"evaluate with the same command without --train-only (folder {out_dir / name})")
    else:
        _print(results, out_dir / name)


def _study_command() -> str:
    """The command a study records as what reproduces it: this one, less the options that only
    split the work."""
    if sys.argv[1:2] != ["experiment"]:
        return "harnessctl experiment hat"
    return "harnessctl " + " ".join(shlex.quote(a) for a in _study_args(sys.argv[1:]))


def _estimate(plan: Any, as_json: bool) -> None:
    # lazy: the experiment package stays off the `harnessctl --help` path; tests patch estimate.estimate_study
    from harnessctl.experiment.estimate import estimate_study, format_minutes

    err.print(f"[dim]timing a few steps of every phase of the {plan.preset} plan on this machine[/]")
    result = estimate_study(plan, say=lambda m: err.print(f"[dim]{m}[/]"), progress=not as_json)
    if as_json:
        print_json(result.to_dict())
        return
    table = Table(title=f"{plan.preset} study: training projected on this machine")
    heldout = any(p.heldout_s for p in result.phases)
    columns = ["arm", "phase", "steps", "s/step", *(["held-out scoring"] if heldout else []), "projected"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("arm", "phase") else "right")
    for p in result.phases:
        scoring = [f"{p.heldout_s:.0f} s" if p.heldout_s else ""] if heldout else []
        table.add_row(
            p.arm, p.phase, str(p.planned_steps), f"{p.seconds_per_step:.2f}", *scoring, format_minutes(p.projected_s)
        )
    table.add_row("datasets", "", "", "", *([""] if heldout else []), format_minutes(result.data_s))
    out.print(table)
    if result.evaluation:
        evals = Table(title=f"evaluation, timed on {result.eval_timed_on}")
        for column in ("run", "cases", "arms", "s/case", "projected"):
            evals.add_column(column, justify="left" if column == "run" else "right")
        for e in result.evaluation:
            evals.add_row(
                e.kind, str(e.planned_cases), str(e.arms), f"{e.seconds_per_case:.2f}", format_minutes(e.projected_s)
            )
        out.print(evals)
    if result.hardware:
        # lazy: the trainer stays off the `harnessctl --help` path
        from trainer.common import hardware_text

        out.print(f"on {hardware_text(result.hardware)}")
    verdict = "within" if result.fits_budget else "over"
    out.print(
        f"training about {format_minutes(result.train_s)}, evaluation about {format_minutes(result.eval_s)}: the study about "
        f"{format_minutes(result.total_s)}, {verdict} the 90-minute budget "
        f"(an anchor phase counted at its max_steps; probe took {result.probe_s:.0f} s)"
    )


def _study_args(argv: list[str]) -> list[str]:
    """The command line without the options that only split the work (its results are the same)."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--train-only", "--eval-only"):
            pass
        elif a in ("--arm", "--train-jobs"):
            skip = True
        elif not a.startswith(("--arm=", "--train-jobs=")):
            kept.append(a)
    return kept


def _print(results: dict, folder: Path) -> None:
    from rich import box

    def n(x: object) -> str:
        return f"{x:.1f}" if isinstance(x, (int, float)) else "—"

    rows = []
    for arm in results["arms"]:
        m, c = arm["metrics"], arm["compute"]
        s, sl = m["scores"], m["slices"]
        rows.append(
            [
                arm["name"],
                n(s.get("livestream")),
                n(s.get("variant")),
                n(sl.get("history_v1")),
                n(sl.get("history_v2")),
                n(s.get("robustness")),
                n(sl.get("tool_faults")),
                n(s.get("ifeval")),
                n(m["latency"].get("p95_s")),
                f"{c.get('train_s', 0):.0f}",
            ]
        )
    rows.append(["paper hat", "94.8", "94.6", "", "", "", "", "83.5", "", ""])
    rows.append(["paper fixed-sft", "", "", "", "", "", "", "73.8", "", ""])
    table = Table(
        title=f"HAT study {results['id']} ({results['plan']['preset']}, {results['eval_cases']} cases per suite)",
        box=box.SIMPLE_HEAD,
        padding=(0, 0),
        show_edge=False,
    )
    # Fits 80 columns without cutting an arm's name or a number: two arms share the prefix
    # "hsa-sft", so a cut name could not tell them apart. Long headers take two lines.
    headers = (
        "arm",
        "live-\nstream",
        "variant",
        "v1",
        "v2",
        "robust-\nness",
        "tool\nfaults",
        "ifeval",
        "P95\ns",
        "train\ns",
    )
    for k, header in enumerate(headers):
        width = max([len(row[k]) for row in rows] + [len(line) for line in header.splitlines()])
        table.add_column(header, justify="left" if k == 0 else "right", no_wrap=True, min_width=width)
    for row in rows:
        table.add_row(*(f"[dim]{row[0]}[/]" if row[0].startswith("paper ") else row[0], *row[1:]))
    out.print(table)
    colors = {"met": "green", "missed": "red"}
    for g in results["goals"]:
        out.print(f"[{colors.get(g['status'], 'dim')}]{g['status']:>6}[/]  {g['goal']}: {g['numbers']}")
    out.print(f"[dim]{folder}/results.json, results.md, report.html[/]")
