"""``harnessctl augment``: harness variants (HSA), a preview of one, or a trajectory dataset.

Three modes of one command, each one library call:

- ``augment --n 50 --out DIR`` writes variant folders + manifests (:func:`write_variants`);
- ``augment --preview`` shows one variant as a semantic diff against its source;
- ``augment --trajectories N --out DIR`` writes a TRL-ready dataset under variants
  (:func:`build_trajectories`); ``--fixed-harness`` writes the canonical-only baseline.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from harnessctl.harness.diff_view import print_diff
from harnessctl.harness.loader import load_harness
from harnessctl.progress import progress_bars
from harnessctl.sim.phrasings import load_phrasings

from .common import HarnessOpt, JsonOpt, resolve_harness_path
from .output import CLIError, cli_errors, err, out, print_json


def register(app: typer.Typer) -> None:
    app.command("augment")(augment)


@contextlib.contextmanager
def _progress(label: str, enabled: bool) -> Iterator[Any]:
    """Progress on stderr of one task; yields ``update(done, total, item)`` (the item unused)."""
    with progress_bars(label, enabled=enabled, console=err) as update:
        yield lambda done, total, _item=None: update(label, done, total)


#: Options that shape a trajectory dataset and mean nothing without ``--trajectories``.
TRAJECTORY_OPTIONS = {
    "teacher": "--teacher",
    "canonical_share": "--canonical-share",
    "fixed_harness": "--fixed-harness",
    "val_share": "--val-share",
    "faults": "--faults",
    "vary_wording": "--vary-wording",
    "phrasings": "--phrasings",
    "quote_skills": "--quote-skills",
    "min_score": "--min-score",
}


def _trajectory_options_given(ctx: typer.Context) -> list[str]:
    """The trajectory-only options typed on the command line (a default is never 'given')."""
    # By name: Typer ships its own copy of click, whose ParameterSource is another class.
    sources = {name: getattr(ctx.get_parameter_source(name), "name", None) for name in TRAJECTORY_OPTIONS}
    return [flag for name, flag in TRAJECTORY_OPTIONS.items() if sources[name] == "COMMANDLINE"]


def augment(
    ctx: typer.Context,
    n: Annotated[
        int, typer.Option("--n", help="Variants to write (with --trajectories: the size of the variant pool).")
    ] = 50,
    ops: Annotated[
        str | None,
        typer.Option(
            "--ops",
            help="Operator families or operators, comma-separated: skills, skill_content, tools, prompt, hooks. Default: all.",
        ),
    ] = None,
    strength: Annotated[
        float, typer.Option("--strength", min=0.0, max=1.0, help="How much each operator changes, 0..1.")
    ] = 0.5,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the variant set (and of the dataset's cases and pairs).")
    ] = 0,
    split: Annotated[
        str, typer.Option("--split", help="Surface vocabulary: train, or heldout for evaluation variants.")
    ] = "train",
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Output folder. Default: out/variants/<harness>-<split>-s<seed>, or out/datasets/<harness>-<hsa|fixed>-s<seed> with --trajectories.",
        ),
    ] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Show one variant as a semantic diff against its source; write nothing.")
    ] = False,
    index: Annotated[int, typer.Option("--index", min=0, help="With --preview: which variant of the set to show.")] = 0,
    trajectories: Annotated[
        int | None,
        typer.Option(
            "--trajectories", min=0, help="Write a dataset of N trajectories (one case each) under the variants."
        ),
    ] = None,
    teacher: Annotated[
        str | None,
        typer.Option(
            "--teacher",
            help="Model that answers instead of the oracle (litellm string or local:<path>); its trajectories are kept only if the scorer passes them.",
        ),
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option(
            "--api-base", help="Endpoint of a served teacher or paraphraser model, e.g. http://127.0.0.1:8000/v1."
        ),
    ] = None,
    canonical_share: Annotated[
        float,
        typer.Option(
            "--canonical-share", min=0.0, max=1.0, help="Share of training trajectories under the canonical harness."
        ),
    ] = 0.3,
    fixed_harness: Annotated[
        bool,
        typer.Option("--fixed-harness", help="Write the baseline dataset: the same cases, canonical harness only."),
    ] = False,
    val_share: Annotated[
        float,
        typer.Option(
            "--val-share", min=0.0, max=0.9, help="Share of cases (and of variants) held out for validation.jsonl."
        ),
    ] = 0.1,
    faults: Annotated[
        float,
        typer.Option(
            "--faults", min=0.0, max=1.0, help="Share of dataset cases with a tool fault plan (retries in the data)."
        ),
    ] = 0.2,
    vary_wording: Annotated[
        float,
        typer.Option(
            "--vary-wording",
            min=0.0,
            max=1.0,
            help="Share of dataset cases whose viewer message is reworded on the surface (shorthand, dropped function words, fillers, case, punctuation).",
        ),
    ] = 0.0,
    phrasings: Annotated[
        Path | None,
        typer.Option(
            "--phrasings",
            help="YAML file of viewer phrasings per message kind, drawn beside the built-in training templates (`phrasings: {price: [...]}`; see docs/augment.md).",
        ),
    ] = None,
    quote_skills: Annotated[
        bool,
        typer.Option(
            "--quote-skills",
            help="The oracle opens each skill-loading turn with a <think> note quoting the skill's catalog line (`description : name`), within the harness's max_think_tokens.",
        ),
    ] = False,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            min=0.0,
            max=1.0,
            help="Keep a trajectory at or above this score (default: 0.99 for the oracle, the scorer's pass mark for a teacher).",
        ),
    ] = None,
    paraphraser: Annotated[
        str,
        typer.Option(
            "--paraphraser",
            help="lexicon (offline, default) or litellm:<model> (cached on disk; API keys from the environment).",
        ),
    ] = "lexicon",
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: the usable CPUs).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace what --out holds from other settings instead of refusing.")
    ] = False,
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Harness State Augmentation: variants that change what the model sees, never the task.

    Rerunning into the same --out with the same settings resumes (finished variants and
    trajectories are skipped); other settings are refused unless --force.
    """
    # lazy: the augment package stays off the `harnessctl --help` path
    from harnessctl.augment import VariantSpec, build_trajectories, make_paraphraser, preview_variant, write_variants

    with cli_errors(ValueError, os_hint=" (check --out)"):
        source = load_harness(resolve_harness_path(harness))
        op_list = [o.strip() for o in ops.split(",") if o.strip()] if ops else None
        para = make_paraphraser(paraphraser, api_base=api_base)  # litellm: cached under .harnessctl/cache
        _refuse_mixed_modes(ctx, n, trajectories, fixed_harness, split)
        if preview or trajectories is None:
            spec = VariantSpec(seed=seed, ops=op_list, strength=strength, split=split, paraphraser=paraphraser)
        if preview:
            result = preview_variant(source, spec, index, paraphraser=para)
        elif trajectories is not None:
            kind = "fixed" if fixed_harness else "hsa"
            target = out_dir or Path("out") / "datasets" / f"{source.name}-{kind}-s{seed}"
            with _progress("trajectories", not as_json or err.is_terminal) as update:
                result = build_trajectories(
                    source,
                    target,
                    _trajectory_spec(ctx.params, op_list),
                    force=force,
                    paraphraser=para,
                    jobs=jobs,
                    api_base=api_base,
                    on_progress=update,
                )
        else:
            target = out_dir or Path("out") / "variants" / f"{source.name}-{split}-s{seed}"
            with _progress("variants", not as_json or err.is_terminal) as update:
                result = write_variants(
                    source, target, spec, n, force=force, paraphraser=para, jobs=jobs, on_progress=update
                )
    if as_json:
        print_json(result.to_dict())
    elif preview:
        _print_preview(result)
    elif trajectories is not None:
        _print_dataset(result)
    else:
        _print_written(result)


def _refuse_mixed_modes(ctx: typer.Context, n: int, trajectories: int | None, fixed_harness: bool, split: str) -> None:
    """Refuse options that mean nothing in the mode the command line picked."""
    given = _trajectory_options_given(ctx) if trajectories is None else []
    if given:
        them = "it" if len(given) == 1 else "them"
        raise CLIError(
            f"{', '.join(given)} shape{'s' if len(given) == 1 else ''} a trajectory dataset: add --trajectories N, or drop {them}"
        )
    if trajectories is not None and trajectories < 1:
        raise CLIError(f"--trajectories must be at least 1, got {trajectories}")
    if n < 1 and not (trajectories is not None and fixed_harness):
        raise CLIError(
            f"--n must be at least 1, got {n} (the number of variants{' in the pool' if trajectories is not None else ''})"
        )
    if trajectories is not None and split != "train" and not ctx.params.get("preview"):
        raise CLIError(
            "trajectories are training data and use the training vocabulary: drop --split (held-out variants are for evaluation)"
        )


def _trajectory_spec(params: dict[str, Any], ops: list[str] | None) -> Any:
    """The dataset the command line asks for (``params``: the parsed options, by name)."""
    # lazy: the augment package stays off the `harnessctl --help` path
    from harnessctl.augment import TrajectorySpec

    phrasings = params["phrasings"]
    return TrajectorySpec(
        n=params["trajectories"],
        seed=params["seed"],
        variants=params["n"],
        ops=ops,
        strength=params["strength"],
        paraphraser=params["paraphraser"],
        canonical_share=params["canonical_share"],
        val_share=params["val_share"],
        fixed_harness=params["fixed_harness"],
        faults=params["faults"],
        teacher=params["teacher"],
        min_score=params["min_score"],
        vary_wording=params["vary_wording"],
        phrasings=load_phrasings(phrasings) if phrasings is not None else None,
        quote_skills=params["quote_skills"],
    )


def _print_written(result: Any) -> None:
    total = len(result.written) + len(result.skipped)
    out.print(
        f"[green]✓[/] {total} variants in {escape(result.out)} ({len(result.written)} written, {len(result.skipped)} already there)"
    )
    floors = ", ".join(f"{k} ≥ {v:g}" for k, v in sorted(result.floors.items()))
    if floors:
        out.print(f"  constraint floors (oracle-feasible): {escape(floors)}")
    out.print(
        f"  index: {escape(result.index)}; check one with [bold]harnessctl validate {escape(result.out)}/<variant>[/]"
    )


def _print_dataset(s: Any) -> None:
    out.print(f"[green]✓[/] dataset in {escape(s.out)}: {s.train} train, {s.validation} validation ({s.source})")
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("pairs", justify="right")
    table.add_column("kept", justify="right")
    table.add_column("rejected", justify="right")
    table.add_column("duplicates", justify="right")
    table.add_column("acceptance", justify="right")
    table.add_column("canonical (train)", justify="right")
    table.add_column("variants train/val", justify="right")
    share = f"{s.canonical_train / s.train:.0%}" if s.train else "-"
    table.add_row(
        str(s.pairs),
        str(s.kept),
        str(s.rejected),
        str(s.duplicates),
        f"{s.acceptance_rate:.1%}",
        f"{s.canonical_train} ({share})",
        f"{s.train_variants}/{s.validation_variants}",
    )
    out.print(table)
    if s.rejections:
        out.print("  rejected: " + escape(", ".join(f"{k} × {v}" for k, v in sorted(s.rejections.items()))))


def _print_preview(p: Any) -> None:
    manifest = p.variant.manifest
    ops = [f"{op.operator} ({len(op.changes)})" for op in manifest.operators if op.changes]
    out.print(
        f"[bold]{escape(p.variant.id)}[/] (seed {manifest.seed}, strength {manifest.strength:g}, split {manifest.split})"
    )
    out.print("  operators: " + escape(", ".join(ops) if ops else "no change"))
    print_diff(p.diff, out)
