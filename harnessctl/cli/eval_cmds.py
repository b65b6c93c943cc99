"""``harnessctl eval | compare | report | judge``: run suites, compare runs, report, calibrate the judge.

Each command parses its options, calls one library function of :mod:`harnessctl.eval` and
prints a rich view or ``--json`` (one JSON object on stdout; progress and messages on stderr).
``compare`` exits 1 when run B regresses beyond the threshold, for CI gates; ``eval`` exits 3
when more cases ended in an error than ``--max-error-share`` allows (the results are kept, and
``--resume`` runs the errored cases again).
"""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.panel import Panel
from rich.table import Table

from harnessctl.eval.compare import GATES, check_suite_versions, compare_results
from harnessctl.eval.runner import EvalConfig, resume_eval, run_estimate, run_eval
from harnessctl.eval.stats import parse_duration
from harnessctl.eval.store import REPORT, RunStore, check_run_id, list_runs
from harnessctl.eval.suites import find_evals_dir
from harnessctl.eval.summary import ORACLE_LABEL, distinct_errors, model_label, shipped_name, summarize
from harnessctl.progress import duration_text, progress_bars

from .common import (
    ApiBaseOpt,
    ApiKeyEnvOpt,
    HarnessOpt,
    JsonOpt,
    MaxTokensOpt,
    ModelOpt,
    RetriesOpt,
    TemperatureOpt,
    choose_model,
    resolve_harness_path,
)
from .output import EXIT_DIFFERENT, EXIT_ERRORS, CLIError, cli_errors, err, fail, out, print_json

RunsDirOpt = Annotated[Path, typer.Option("--runs-dir", help="Folder that holds run folders.")]
EvalsDirOpt = Annotated[Path, typer.Option("--evals-dir", help="Folder that holds the suite files.")]
DEFAULT_RUNS_DIR = Path("runs")

eval_app = typer.Typer(
    help="Run evaluation suites against a model (see also: eval build-suites).",
    invoke_without_command=True,
    no_args_is_help=False,
)
judge_app = typer.Typer(
    help="The agent-as-judge: calibrate it against labelled episodes, label episodes.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
    app.command("runs")(runs)
    app.command("compare")(compare)
    app.command("report")(report)
    app.add_typer(judge_app, name="judge")


def _progress(label: str, enabled: bool = True) -> contextlib.AbstractContextManager[Any]:
    """Progress on stderr, one task per suite; yields ``update(key, done, total)``."""
    return progress_bars(label, enabled=enabled, console=err)


# -- eval -----------------------------------------------------------------------------------------


@eval_app.callback()
def eval_cmd(
    ctx: typer.Context,
    suite: Annotated[
        str, typer.Option("--suite", "-s", help="livestream, variant, robustness, ifeval, all, or a comma list.")
    ] = "livestream",
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", help="Cases in flight at once (default 8; on --resume, the run's own)."),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=0,
            help="Run an evenly spread sample of N cases per suite; 0: every case. Default: every case, "
            "except 100 per suite for an in-process model (local:, shipped:).",
        ),
    ] = None,
    all_cases: Annotated[bool, typer.Option("--all", help="Run every case of each suite (same as --limit 0).")] = False,
    repeat: Annotated[int, typer.Option("--repeat", help="Run each case K times (reports pass^k).")] = 1,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Finish the run with this id (or folder): only missing cases run.")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the model-call cache.")] = False,
    latency_budget: Annotated[
        str, typer.Option("--latency-budget", help="Reply latency budget, e.g. 15s or 800ms.")
    ] = "15s",
    case_timeout: Annotated[
        str,
        typer.Option(
            "--case-timeout",
            help="Give up on one case (an error, run again by --resume) after this long, e.g. 120s or 2m. "
            "auto: scaled from a timed first case for an in-process model (4 x its time x -j, at least 60s), "
            "else 120s.",
        ),
    ] = "auto",
    temperature: TemperatureOpt = 0.0,
    max_tokens: MaxTokensOpt = 256,
    retries: RetriesOpt = 2,
    max_error_share: Annotated[
        float,
        typer.Option(
            "--max-error-share",
            min=0.0,
            max=1.0,
            help="Share of cases (0-1) that may end in a model error or timeout; above it the run exits 3. Default 0: any error fails the run.",
        ),
    ] = 0.0,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id", help="Name the run folder: letters, digits, '.', '_', '-' (default: time-suite-model)."
        ),
    ] = None,
    harness: HarnessOpt = None,
    runs_dir: RunsDirOpt = Path("runs"),
    evals_dir: EvalsDirOpt = Path("evals"),
    as_json: JsonOpt = False,
) -> None:
    """Run suites against a model: scores 0-100 per suite, breakdowns, latency percentiles.

    Results are appended to runs/<id>/records.jsonl as each case ends; a run stopped for any
    reason finishes with --resume <id>, with the run's own settings. Exit codes: 0 done, 2 bad
    input or a model that cannot be reached (checked before the first case), 3 more cases ended
    in an error than --max-error-share allows.
    """
    if ctx.invoked_subcommand is not None:
        return

    where = "" if runs_dir == DEFAULT_RUNS_DIR else f" --runs-dir {shlex.quote(str(runs_dir))}"
    with cli_errors(ValueError):
        if resume:
            _refuse_settings_on_resume(ctx)
            with _progress("eval", enabled=not as_json or err.is_terminal) as update:
                outcome = resume_eval(resume, runs_dir=runs_dir, jobs=jobs, progress=update)
        else:
            if run_id is not None:
                check_run_id(run_id)
            config = _eval_config(ctx.params)  # the default model is named next, once the settings are known good
            config.use_model(choose_model(model), limit, all_cases=all_cases)
            with _progress("eval", enabled=not as_json or err.is_terminal) as update:
                outcome = run_eval(
                    config,
                    progress=update,
                    run_id=run_id,
                    on_start=lambda store: _say_start(store, where),
                )
    summary = outcome.summary
    if as_json:
        print_json(_json_summary(summary, outcome.store.root))
    else:
        _print_summary(summary, outcome.store.root, outcome.skipped, where)
        _note_control_suites(outcome.store.manifest)
        _note_sample(outcome.store.manifest)
        _note_variants(summary)
    _exit_on_errors(summary, outcome.store.manifest, where)


def _eval_config(p: dict[str, Any]) -> Any:
    """The settings of a new run from the command's parsed options (``ctx.params``); its model and
    cases per suite are set after (:meth:`~harnessctl.eval.runner.EvalConfig.use_model`)."""
    return EvalConfig(
        suites=[s.strip() for s in p["suite"].split(",") if s.strip()],
        model=p["model"] or "",
        api_base=p["api_base"],
        api_key_env=p["api_key_env"],
        jobs=8 if p["jobs"] is None else p["jobs"],
        limit=None if p["limit"] == 0 else p["limit"],
        repeat=p["repeat"],
        cache=not p["no_cache"],
        latency_budget_s=parse_duration(p["latency_budget"]),
        case_timeout_s=120.0 if p["case_timeout"] == "auto" else parse_duration(p["case_timeout"]),
        scale_timeout=p["case_timeout"] == "auto",
        temperature=p["temperature"],
        max_tokens=p["max_tokens"],
        retries=p["retries"],
        max_error_share=p["max_error_share"],
        harness_path=str(resolve_harness_path(p["harness"])),
        evals_dir=str(find_evals_dir(p["evals_dir"])),
        runs_dir=str(p["runs_dir"]),
    )


def _say_start(store: Any, where: str) -> None:
    """The run's folder, how to finish it, and, for a long run, how long it will take."""
    err.print(
        f"run [bold]{store.run_id}[/] in {store.root} "
        f"(stopped? finish it with `harnessctl eval --resume {store.run_id}{where}`)"
    )

    estimate = run_estimate(store.manifest)
    if estimate and estimate["seconds"] >= 120:
        c = estimate["config"]
        err.print(
            f"[yellow]{estimate['cases']:,} cases, about {duration_text(estimate['seconds'])} at the measured "
            f"{c['preflight_case_s']:.1f} s a case[/] — `--limit N` samples N per suite evenly; "
            f"case timeout {c['case_timeout_s']:g}s"
        )


#: Options that decide what a run does: a resume takes them from the run's manifest.
_RUN_SETTINGS = (
    "suite",
    "model",
    "api_base",
    "api_key_env",
    "limit",
    "all_cases",
    "repeat",
    "no_cache",
    "latency_budget",
    "case_timeout",
    "temperature",
    "max_tokens",
    "retries",
    "max_error_share",
    "run_id",
)


def _refuse_settings_on_resume(ctx: typer.Context) -> None:
    # Typer ships its own copy of click: compare the source by name, not by click's enum.
    given = [p for p in _RUN_SETTINGS if getattr(ctx.get_parameter_source(p), "name", "") == "COMMANDLINE"]
    if given:
        flags = ", ".join("--" + p.replace("_", "-") for p in given)
        raise CLIError(
            f"--resume finishes a run with its own settings (from its manifest); drop {flags} "
            "(-j/--jobs, --runs-dir and --json go with --resume), or start a new run"
        )


def _exit_on_errors(summary: dict[str, Any], manifest: dict[str, Any], where: str) -> None:
    """Exit 3 when more results ended in an error than the run tolerates; say how many."""
    errors = int(summary.get("errors") or 0)
    if not errors:
        return
    total = sum(s["n_results"] for s in summary["suites"].values()) or 1
    share = float((manifest.get("config") or {}).get("max_error_share") or 0.0)
    run_id = summary.get("run_id")
    err.print(
        f"[bold red]{errors} of {total} cases ended in an error[/] (not scored as passes); the first distinct errors:"
    )
    for e in summary.get("first_errors") or []:
        err.print(f"  [red]{e['count']} ×[/] {_escape(e['error'])}")
    config = manifest.get("config") or {}
    if any(str(e["error"]).startswith("timeout") for e in summary.get("first_errors") or []):
        err.print(
            f"cases timed out: with fewer cases in flight each finishes sooner (lower -j, now {config.get('jobs')}), "
            f"or give each longer (raise --case-timeout, now {config.get('case_timeout_s'):g}s); a timed-out case "
            "has no score (it is not counted as a low one)"
        )
    if errors / total > share:
        err.print(
            f"fix the cause, then run them again with `harnessctl eval --resume {run_id}{where}`"
            + (
                f" (allowed: {share:.0%} of cases; see --max-error-share)"
                if share
                else " (to tolerate some, pass --max-error-share)"
            )
        )
        raise typer.Exit(EXIT_ERRORS)
    err.print(
        f"[yellow]within --max-error-share {share:g}[/]: run them again with `harnessctl eval --resume {run_id}{where}`"
    )


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _json_summary(summary: dict[str, Any], root: Path) -> dict[str, Any]:
    suites = {}
    for name, s in summary["suites"].items():
        lat = s["latency"]
        entry = {
            "score": s["score"],
            "n": s["n"],
            "n_results": s["n_results"],
            "pass_rate": s["pass_rate"],
            "errors": s["errors"],
            "cached": s.get("cached", 0),
            "cache_hits": s.get("cache_hits", 0),
            "model_calls": s.get("model_calls", 0),
            "latency": {k: lat.get(k) for k in ("p50", "p95", "p99", "mean", "over_budget", "budget_s")},
            "components": s["components"],
        }
        for extra in ("ifeval", "pass_hat_k"):
            if extra in s:
                entry[extra] = s[extra]
        suites[name] = entry
    return {
        "run_id": summary.get("run_id"),
        "run_dir": str(root),
        "model": summary.get("model"),
        "model_label": summary.get("model_label"),
        "reference_policy": summary.get("reference_policy", False),
        "complete": summary.get("complete"),
        "overall": summary.get("overall"),
        "errors": summary.get("errors", 0),
        "first_errors": summary.get("first_errors", []),
        "cache": summary.get("cache", {}),
        "suites": suites,
        "skipped": summary.get("skipped", {}),
        **({"variants": summary["variants"]} if summary.get("variants") else {}),
    }


def _fmt_s(x: Any) -> str:
    return "—" if x is None else f"{x:.2f}s"


def _note_sample(manifest: dict[str, Any]) -> None:
    """Say so when the run sampled its suites by default (an in-process model without --limit)."""
    config = manifest.get("config") or {}
    if not config.get("sampled"):
        return
    sizes = ", ".join(
        f"{(info or {}).get('planned_cases')} of {(info or {}).get('n', '?'):,} {name}"
        for name, info in (manifest.get("suites") or {}).items()
    )
    out.print(
        f"[dim]sampled evenly: {sizes} cases (an in-process model runs {config.get('limit')} per suite "
        "unless told; --all or --limit 0 runs every case)[/]"
    )


def _note_variants(summary: dict[str, Any]) -> None:
    """Say how the held-out variants were obtained: frozen with the suite, or regenerated by HSA."""
    v = summary.get("variants") or {}
    whys = sorted({e.get("why", "") for e in (v.get("by_variant") or {}).values() if e.get("source") == "regenerated"})
    if v.get("regenerated"):
        out.print(
            f"[yellow]variants: {v['regenerated']} regenerated[/], {v.get('frozen', 0)} frozen: {_escape(whys[0])}"
        )
    elif v.get("frozen"):
        out.print(f"[dim]variants: {v['frozen']} frozen with the suite, none regenerated[/]")


def _note_control_suites(manifest: dict[str, Any]) -> None:
    """Say so when a suite of the run is a control (``build-suites --messages train``)."""
    for name, info in (manifest.get("suites") or {}).items():
        side = (info or {}).get("messages")
        if side and side != "eval":
            out.print(
                f"[yellow]{name} is a control:[/] its viewer messages are worded from the {side} templates, "
                "not the held-out ones the suites use; compare it with a run on the same control"
            )


def _print_summary(summary: dict[str, Any], root: Path, skipped: dict[str, str], where: str = "") -> None:
    label = summary.get("model_label") or model_label(summary.get("model"))
    t = Table(
        title=f"run {summary.get('run_id')} · {_escape(label)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
    )
    for col in ("suite", "score", "n", "pass%", "P50", "P95", "P99", ">budget", "errors", "cached"):
        t.add_column(col, justify="left" if col == "suite" else "right", no_wrap=True)
    for name, s in summary["suites"].items():
        lat = s["latency"]
        over = lat.get("over_budget")
        style = "green" if s["score"] >= 90 else "yellow" if s["score"] >= 50 else "red"
        t.add_row(
            name,
            f"[{style}]{s['score']:.1f}[/]",
            str(s["n"]),
            f"{s['pass_rate']:.1f}",
            _fmt_s(lat.get("p50")),
            _fmt_s(lat.get("p95")),
            _fmt_s(lat.get("p99")),
            "—" if over is None else f"{100 * over:.1f}%",
            f"[red]{s['errors']}[/]" if s["errors"] else "0",
            str(s.get("cached", 0)),
        )
    out.print(t)
    for name, s in summary["suites"].items():
        parts = ", ".join(f"{k} {v:.1f}" for k, v in s["components"].items())
        if parts:
            out.print(f"[bold]{name}[/] components: {parts}")
        if "ifeval" in s:
            i = s["ifeval"]
            out.print(
                f"  IFEval prompt-level strict {i['prompt_strict']:.1f} · loose {i['prompt_loose']:.1f} · "
                f"instruction-level strict {i['instruction_strict']:.1f} · loose {i['instruction_loose']:.1f}"
            )
        if "pass_hat_k" in s:
            out.print("  " + ", ".join(f"pass^{k} {v:.1f}" for k, v in s["pass_hat_k"].items()))
    cache = summary.get("cache") or {}
    if cache.get("hits"):
        out.print(
            f"[dim]cache: {cache['hits']} of {cache['model_calls']} model calls answered from the cache "
            "(latency percentiles leave fully cached cases out)[/]"
        )
    if summary.get("reference_policy"):
        out.print(
            "[yellow]these are the scores of the oracle, the reference policy that reads each case's answer key — not of a model[/]"
        )
    for name, why in skipped.items():
        err.print(f"[yellow]skipped {name}:[/] {why}")
    if not summary.get("complete"):
        err.print(
            f"[yellow]incomplete run:[/] finish it with `harnessctl eval --resume {summary.get('run_id')}{where}`"
        )
    out.print(
        f"[dim]records, manifest and summary in {root}; HTML with `harnessctl report {summary.get('run_id')}{where}`[/]"
    )


@eval_app.command("build-suites")
def build_suites_cmd(
    suite: Annotated[str, typer.Option("--suite", "-s", help="Suites to rebuild: all or a comma list.")] = "all",
    harness: HarnessOpt = None,
    evals_dir: EvalsDirOpt = Path("evals"),
    ifeval_prompts: Annotated[
        Path | None,
        typer.Option(
            "--ifeval-prompts",
            help="Official IFEval prompts instead of generated ones: a local input_data.jsonl, or google/IFEval to fetch them with `datasets` (online only).",
        ),
    ] = None,
    messages: Annotated[
        str,
        typer.Option(
            "--messages",
            help="Viewer messages from the held-out templates ('eval', the suites) or the training data's "
            "('train': a control, into its own --evals-dir; a model far better on it has learned the "
            "training phrasings, not the task).",
        ),
    ] = "eval",
    as_json: JsonOpt = False,
) -> None:
    """Rebuild the suite files in evals/ deterministically (same code and seeds, same bytes)."""
    # lazy: the suite builder stays off the `harnessctl --help` path
    from harnessctl.eval.build import MESSAGE_SIDES, build_all

    if messages not in MESSAGE_SIDES:
        fail(f"--messages: expected one of {', '.join(MESSAGE_SIDES)}, got {messages!r}")
    if messages != "eval" and evals_dir.resolve() == Path("evals").resolve():
        fail(
            f"--messages {messages} builds control suites: write them to a folder of their own "
            f"(--evals-dir evals-{messages}), not over the suites in {evals_dir}"
        )
    names = None if suite == "all" else [s.strip() for s in suite.split(",") if s.strip()]
    with cli_errors(ValueError):
        with _progress("build", enabled=not as_json or err.is_terminal) as update:
            index = build_all(
                evals_dir,
                harness_path=resolve_harness_path(harness),
                suites=names,
                ifeval_prompts=ifeval_prompts,
                progress=update,
                messages=messages,
            )
    if as_json:
        print_json(index)
        return
    control = " · viewer messages from the training templates (a control)" if messages != "eval" else ""
    t = Table(title=f"suites in {evals_dir}{control}", title_justify="left")
    for col in ("suite", "cases", "version", "sha256"):
        t.add_column(col)
    for name, info in index["suites"].items():
        t.add_row(name, str(info["n"]), str(info["version"]), info["sha256"][:12])
    out.print(t)


# -- runs, compare and report ---------------------------------------------------------------------


def runs(
    runs_dir: RunsDirOpt = DEFAULT_RUNS_DIR,
    as_json: JsonOpt = False,
) -> None:
    """List the runs in the runs folder, newest first.

    Each row: id, model, suites, scores, errors, and whether every planned case has a result."""
    with cli_errors(ValueError):
        rows = list_runs(runs_dir)
    if as_json:
        print_json({"runs_dir": str(runs_dir), "runs": rows})
        return
    if not rows:
        out.print(f"no runs in {runs_dir} (start one with `harnessctl eval --suite livestream --model ...`)")
        return
    _print_runs(rows, runs_dir)


def _print_runs(rows: list[dict[str, Any]], runs_dir: Path) -> None:
    """The runs as a table (id, model, suites and scores, errors, done); then what could not be read."""
    t = Table(title=f"runs in {runs_dir}", title_justify="left", box=box.SIMPLE_HEAD)
    # the run id is what the next command needs (`compare`, `report`, `--resume`): never cut it;
    # a long model path folds onto more lines instead
    t.add_column("run", no_wrap=True, min_width=max(len(str(r["run_id"])) for r in rows))
    models = [_model_label(r.get("model")) for r in rows]
    t.add_column("model", overflow="fold", min_width=min(12, max(len(m) for m in models)))
    t.add_column("suites", min_width=len("livestream"))  # one suite name a line, never cut
    # with one suite a run, the overall score repeats the suite's: leave the room to the model
    overall = any(len(r.get("scores") or {}) > 1 for r in rows)
    if overall:
        t.add_column("overall", justify="right", no_wrap=True, min_width=len("100.0"))
    t.add_column("errors", justify="right", no_wrap=True, min_width=len("errors"))
    t.add_column("done", no_wrap=True, min_width=len("done"))
    for r in rows:
        if "problem" in r:
            t.add_row(r["run_id"], "[red]unreadable (below)[/]", *[""] * (4 if overall else 3))
            continue
        scores = ", ".join(f"{k} {v:.1f}" for k, v in r["scores"].items())
        done = "[green]yes[/]" if r["complete"] else f"[yellow]no ({r['results']}/{r['planned']})[/]"
        model = _escape(_model_label(r.get("model")))
        t.add_row(
            r["run_id"],
            model,
            scores or ", ".join(r["suites"]),
            *([f"{r['overall']:.1f}"] if overall else []),
            f"[red]{r['errors']}[/]" if r["errors"] else "0",
            done,
        )
    out.print(t)
    if any(r.get("model") == "oracle" for r in rows):
        out.print(f"[dim]* the oracle: the {ORACLE_LABEL}, not a model[/]")
    for r in rows:
        if "problem" in r:
            err.print(f"[red]{r['run_id']}:[/] {_escape(r['problem'])}")


def _model_label(model: Any) -> str:
    return "oracle*" if model == "oracle" else shipped_name(model)


def compare(
    run_a: Annotated[str, typer.Argument(help="The baseline run (id or folder).")],
    run_b: Annotated[str, typer.Argument(help="The candidate run (id or folder).")],
    threshold: Annotated[
        float,
        typer.Option("--threshold", help="A drop of more than this many points in a suite is a regression (exit 1)."),
    ] = 1.0,
    runs_dir: RunsDirOpt = Path("runs"),
    show_flips: Annotated[int, typer.Option("--show-flips", help="Flipped cases listed per suite.")] = 10,
    force: Annotated[
        bool, typer.Option("--force", help="Compare runs made on different suites versions anyway.")
    ] = False,
    gate: Annotated[
        str,
        typer.Option(
            "--gate",
            help="What must lie beyond --threshold for a regression: 'point' (the drop's estimate) or "
            "'interval' (its whole 95% interval: only drops the cases leave no doubt about).",
        ),
    ] = "point",
    as_json: JsonOpt = False,
) -> None:
    """Compare two runs: per-suite deltas with 95% bootstrap intervals and the cases that flipped.

    Exit 1 when a suite of RUN_B scores more than --threshold points below RUN_A; exit 2 when the
    runs used different suites versions (unless --force).

    With --gate interval a drop is a regression only when its whole 95% interval lies beyond
    --threshold."""
    if gate not in GATES:
        fail(f"--gate: expected one of {', '.join(GATES)}, got {gate!r}")
    with cli_errors(ValueError):
        a, b = RunStore.open(run_a, runs_dir), RunStore.open(run_b, runs_dir)
        if not force:
            check_suite_versions(a.manifest, b.manifest)
        results_a, results_b = a.results(), b.results()
        cmp = compare_results(
            results_a,
            results_b,
            threshold=threshold,
            gate=gate,
            run_a=a.run_id,
            run_b=b.run_id,
            skipped_a=(a.summary() or {}).get("skipped"),
            skipped_b=(b.summary() or {}).get("skipped"),
        )
    models = {"a": _run_model(a.manifest), "b": _run_model(b.manifest)}
    if as_json:
        print_json({**cmp.to_dict(), "models": models})
    else:
        for side, run in (("A", cmp.run_a), ("B", cmp.run_b)):
            m = models[side.lower()]
            memorised = f" · memorised {m['reference']['label']}" if m["reference"] else ""
            out.print(f"[dim]{side}: {run} · model {m['model']}{memorised}[/]")
        _print_comparison(cmp, threshold, show_flips)
        _warn_errors(cmp, {"a": results_a, "b": results_b}, {"a": a, "b": b})
    if cmp.regression:
        if not as_json:
            names = ", ".join(s.suite for s in cmp.suites.values() if s.regression)
            what = "its whole 95% interval" if gate == "interval" else "its estimate"
            err.print(f"[bold red]regression[/] in {names}: more than {_points(threshold)} below {cmp.run_a} ({what})")
        raise typer.Exit(EXIT_DIFFERENT)


def _warn_errors(cmp: Any, results: dict[str, list[Any]], stores: dict[str, Any]) -> None:
    """Say, for each run, how many cases ended in an error: they have no score and are left out
    of the comparison (not counted as low scores); ``eval --resume`` runs them again."""
    for side, n in cmp.errors.items():
        if not n:
            continue
        what = "; ".join(f"{e['count']} × {e['error'][:120]}" for e in distinct_errors(results[side], limit=2))
        run = stores[side].run_id
        err.print(
            f"[yellow]warning:[/] {n} case{'s' if n != 1 else ''} of run {side.upper()} ({_escape(run)}) ended in an "
            f"error and have no score ({_escape(what)}): left out of the comparison, not counted as low scores; "
            f"`harnessctl eval --resume {_escape(run)}` runs them again"
        )


def _run_model(manifest: dict[str, Any]) -> dict[str, Any]:
    """The run's model and, for the harness-blind reference, the surface it memorised."""
    return {"model": manifest.get("model"), "reference": manifest.get("reference")}


def _points(n: float) -> str:
    """``1 point``, ``2.5 points``."""
    return f"{n:g} point" + ("" if n == 1 else "s")


def _print_comparison(cmp: Any, threshold: float, show_flips: int) -> None:
    t = Table(
        title=f"{cmp.run_b} (B) vs {cmp.run_a} (A) · threshold {_points(threshold)} ({cmp.gate}) · "
        "scores and Δ on the cases both runs scored",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("suite", "shared", "A", "B", "Δ", "95% CI", "p→f", "f→p"):
        t.add_column(col, justify="left" if col == "suite" else "right", no_wrap=True)
    notes: list[str] = []
    for s in cmp.suites.values():
        d = s.delta
        if s.present_in != "both":
            side, other = (("A", "B"), ("B", "A"))[s.present_in == "B"]
            n = s.only_a or s.only_b
            why = s.skipped_b if s.present_in == "A" else s.skipped_a
            t.add_row(s.suite, f"[dim]{side} only[/]", "", "", "", "", "", "")
            notes.append(
                f"{s.suite}: only run {side} has it ({n} cases); run {other} "
                + (f"skipped it: {why}" if why else "did not run it")
                + "; not compared"
            )
            continue
        if not s.n_paired:
            t.add_row(s.suite, "[yellow]0[/]", "", "", "", "", "", "")
            errored = f", {len(s.errors_a)} errored in A, {len(s.errors_b)} in B" if s.errors_a or s.errors_b else ""
            notes.append(
                f"{s.suite}: no case both runs scored ({s.only_a} only in A, {s.only_b} only in B{errored}); not compared"
            )
            continue
        color = "red" if s.regression else "green" if d.value > 0 else "white"
        t.add_row(
            f"[bold red]{s.suite} ✗[/]" if s.regression else s.suite,
            str(s.n_paired),
            f"{s.score_a:.1f}",
            f"{s.score_b:.1f}",
            f"[{color}]{d.value:+.1f}[/]",
            f"[{d.low:+.1f}, {d.high:+.1f}]" if s.has_interval else "[dim]1 case[/]",
            str(len(s.pass_to_fail)),
            str(len(s.fail_to_pass)),
        )
        if s.only_a or s.only_b:
            notes.append(
                f"{s.suite}: compared on the {s.n_paired} shared cases; left out {s.only_a} only in A, {s.only_b} only in B"
            )
        if s.errors_a or s.errors_b:
            notes.append(
                f"{s.suite}: left out {len(s.errors_a)} case(s) that errored in A, {len(s.errors_b)} in B (no score): "
                + ", ".join((s.errors_a + s.errors_b)[:show_flips])
            )
        if d.value < -threshold and not s.beyond_noise:
            # the point gate flags it, or the interval gate passed it: either way say why
            why = (
                f"the drop's 95% interval [{d.low:+.1f}, {d.high:+.1f}] reaches 0 — at {s.n_paired} paired cases "
                "it is not told apart from sampling noise"
                if s.has_interval
                else "the drop rests on one paired case, which cannot tell it apart from sampling noise"
            )
            notes.append(
                f"{s.suite}: {why} (more cases: --limit; "
                + (
                    "the interval gate lets it pass)"
                    if cmp.gate == "interval"
                    else "to fail only on drops beyond doubt: --gate interval)"
                )
            )
    out.print(t)
    for s in cmp.suites.values():
        if s.pass_to_fail:
            out.print(
                f"[red]{s.suite} pass→fail:[/] "
                + ", ".join(s.pass_to_fail[:show_flips])
                + (" …" if len(s.pass_to_fail) > show_flips else "")
            )
        if s.fail_to_pass:
            out.print(
                f"[green]{s.suite} fail→pass:[/] "
                + ", ".join(s.fail_to_pass[:show_flips])
                + (" …" if len(s.fail_to_pass) > show_flips else "")
            )
    for note in notes:
        out.print(f"[dim]{note}[/]")


def report(
    run: Annotated[str, typer.Argument(help="The run (id or folder).")],
    out_file: Annotated[
        Path | None, typer.Option("--out", "-o", help="HTML file to write (default: runs/<id>/report.html).")
    ] = None,
    runs_dir: RunsDirOpt = Path("runs"),
    max_details: Annotated[
        int, typer.Option("--max-details", help="Cases per suite with a full drill-down (failures first).")
    ] = 200,
    diagnosis: Annotated[
        bool,
        typer.Option(
            "--diagnosis/--no-diagnosis",
            help="Include the diagnosis: failures clustered by kind, component and harness element.",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Write a self-contained HTML report of a run, or print its summary as JSON with --json.

    Plots are inline (no network); a diagnosis section ranks the failure clusters by impact."""
    # lazy: the report and diagnosis modules stay off the `harnessctl --help` path
    from harnessctl.eval.report import render_report

    with cli_errors(ValueError):
        store = RunStore.open(run, runs_dir)
        results = store.results()
        manifest = store.manifest
        budget = (manifest.get("config") or {}).get("latency_budget_s")
        summary = summarize(results, manifest, latency_budget_s=budget)
        if as_json:
            print_json(summary)
            return
        target = out_file or (store.root / REPORT)
        html = render_report(results, manifest, summary=summary, max_details=max_details)
        if diagnosis:
            # lazy: the report and diagnosis modules stay off the `harnessctl --help` path
            from harnessctl.loop.diagnose import diagnose_run
            from harnessctl.loop.report import with_diagnosis

            html = with_diagnosis(html, diagnose_run(store.root))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    out.print(f"report written to [bold]{target}[/] ({len(html) // 1024} KiB, {len(results)} cases)")
    if summary.get("reference_policy"):
        err.print("[yellow]this run is of the oracle: the reference policy that reads the answer key, not a model[/]")


# -- judge ----------------------------------------------------------------------------------------


@judge_app.command("calibrate")
def judge_calibrate(
    labels: Annotated[Path, typer.Option("--labels", help="Labels file (JSONL), e.g. evals/labels.jsonl.")] = Path(
        "evals/labels.jsonl"
    ),
    judge: Annotated[
        str | None, typer.Option("--judge", help="Judge model: a litellm model string (default: $HARNESSCTL_JUDGE).")
    ] = None,
    api_base: ApiBaseOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Judge calls in flight at once.")] = 4,
    pairwise: Annotated[
        bool,
        typer.Option(
            "--pairwise/--no-pairwise", help="Also measure position-swap consistency on pairs of the same case."
        ),
    ] = True,
    limit: Annotated[int | None, typer.Option("--limit", help="Use the first N labels only.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure the judge against labelled episodes.

    Agreement, Cohen's kappa, TPR/TNR and position-swap consistency, each with a 95% bootstrap
    interval."""
    # lazy: the judge modules stay off the `harnessctl --help` path
    from harnessctl.eval.calibrate import calibrate_labels

    spec = judge or os.environ.get("HARNESSCTL_JUDGE")
    with cli_errors(ValueError):
        if not spec:
            raise CLIError(
                "no judge model: pass --judge MODEL (a litellm string, e.g. openai/gpt-4o-mini) or set HARNESSCTL_JUDGE"
            )
        if spec == "oracle" or spec.startswith(("local:", "shipped:")):
            raise CLIError(
                f"--judge {spec}: a judge must be a served model that can read and reason (a litellm model string)"
            )
        if limit is not None and limit < 1:
            raise CLIError(f"--limit must be at least 1, got {limit}")
        if jobs < 1:
            raise CLIError(f"-j/--jobs must be at least 1, got {jobs}")
        with _progress("judge", enabled=not as_json or err.is_terminal) as update:
            rep = calibrate_labels(
                labels,
                spec,
                api_base=api_base,
                limit=limit,
                pairwise=pairwise,
                jobs=jobs,
                progress=lambda d, t: update("judge", d, t),
                warn=lambda message: err.print(f"[yellow]warning:[/] {message}"),
            )
    if as_json:
        print_json(rep.to_dict())
        return
    _print_calibration(rep, labels)


def _print_calibration(rep: Any, labels: Path) -> None:
    """The judge's agreement with the labels, each metric with its 95% interval; then the first
    disagreements."""
    t = Table(
        title=f"judge {rep.judge} vs {labels} ({rep.n} episodes: {rep.n_pass_labels} pass, {rep.n_fail_labels} fail)",
        title_justify="left",
    )
    for col in ("metric", "value", "95% CI"):
        t.add_column(col, justify="left" if col == "metric" else "right")

    def row(name: str, iv: Any) -> None:
        if iv is not None:
            t.add_row(name, f"{iv.value:.3f}", f"[{iv.low:.3f}, {iv.high:.3f}]")

    row("agreement", rep.agreement)
    row("Cohen's κ", rep.kappa)
    row("TPR (pass labels passed)", rep.tpr)
    row("TNR (fail labels failed)", rep.tnr)
    row(f"swap consistency ({rep.n_pairs} pairs)", rep.swap_consistency)
    row("pairwise accuracy", rep.pairwise_accuracy)
    for k, iv in rep.criteria_agreement.items():
        row(f"criterion {k}", iv)
    out.print(t)
    if rep.judge_errors:
        err.print(f"[yellow]{rep.judge_errors} judge answers held no verdict (counted as fail)[/]")
    for d in rep.disagreements[:10]:
        out.print(f"[dim]{d['id']}: label {d['label']}, judge {d['judge']} — {d['judge_reason'][:100]}[/]")


@judge_app.command("label")
def judge_label(
    run: Annotated[str, typer.Argument(help="The run whose episodes to label (id or folder).")],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Labels file to append to.")] = Path(
        "evals/labels.jsonl"
    ),
    runs_dir: RunsDirOpt = Path("runs"),
    labeler: Annotated[str, typer.Option("--labeler", help="Your name or handle, stored with each label.")] = "",
    criteria: Annotated[bool, typer.Option("--criteria/--no-criteria", help="Also ask each rubric criterion.")] = False,
) -> None:
    """Label a run's episodes in the terminal (pass/fail + reason).

    Every answer is saved at once; run the command again to continue where you stopped."""
    # lazy: the judge modules stay off the `harnessctl --help` path
    from harnessctl.eval.judge import RUBRIC
    from harnessctl.eval.labels import open_label_session

    with cli_errors(ValueError):
        session = open_label_session(run, runs_dir=runs_dir, out_file=out_file, labeler=labeler)
    todo = session.todo
    if not todo:
        out.print(f"nothing left to label in {session.run_id} (labels in {out_file})")
        return
    out.print(f"{len(todo)} episodes to label → {out_file}. Answer p (pass), f (fail), s (skip) or q (quit).")
    out.print("Rubric:\n" + "\n".join(f"  {c.key}: {c.question}" for c in RUBRIC))
    done = i = 0
    stopped_by: str | None = None
    with cli_errors():
        try:
            for i, r in enumerate(todo, 1):
                answer = _ask_label(r, i, len(todo), criteria)
                if answer == "q":
                    break
                if answer is not None:
                    session.save(r, *answer)
                    done += 1
        except EOFError:  # the answers piped in ran out: what was answered is saved
            stopped_by = "the input ended"
        except KeyboardInterrupt:
            stopped_by = "interrupted"
    if stopped_by:
        out.print()  # end the prompt line the input left open
    out.print(f"{done} labels written to {out_file}")
    if stopped_by:
        # The episode on screen when input stopped (the i-th) has no label: the next run starts with it.
        left = len(todo) - i + 1
        err.print(f"{stopped_by} with {left} episode{'s' * (left != 1)} left; run the same command to continue")
        if stopped_by == "interrupted":
            raise typer.Exit(130)


def _ask_label(r: Any, i: int, n: int, criteria: bool) -> Any:
    """Show the i-th of n episodes and ask its verdict: ``"q"`` (quit), ``None`` (skipped) or
    (verdict, reason, criteria) to save."""
    from rich.prompt import Confirm, Prompt

    # lazy: the judge modules stay off the `harnessctl --help` path
    from harnessctl.eval.judge import RUBRIC, render_episode

    out.print(
        Panel(render_episode(r.record or {}), title=f"[{i}/{n}] {r.suite} · {r.case_id} · {r.intent}", expand=False)
    )
    choice = Prompt.ask("verdict", choices=["p", "f", "s", "q"], console=out)
    if choice == "q":
        return "q"
    if choice == "s":
        return None
    crit: dict[str, bool] = {}
    if criteria:
        for c in RUBRIC:
            crit[c.key] = Confirm.ask(f"  {c.key}?", default=choice == "p", console=out)
    reason = Prompt.ask("reason", default="", console=out)
    return ("pass" if choice == "p" else "fail", reason, crit)
