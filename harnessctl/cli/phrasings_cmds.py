"""``harnessctl phrasings``: a team's viewer phrasings for training data — check a file, or have
a teacher model write one (:mod:`harnessctl.sim.phrasings`, :mod:`harnessctl.augment.phrasing_writer`).

The file feeds ``augment --trajectories N --phrasings FILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from harnessctl.models.base import reads_answer_key
from harnessctl.models.registry import resolve_model
from harnessctl.progress import progress_bars
from harnessctl.sim.phrasings import load_phrasings, near_copies

from .common import JsonOpt
from .output import CLIError, cli_errors, err, out, print_json

phrasings_app = typer.Typer(
    help="Viewer phrasings per message kind for training data: check a file, or have a teacher model write one.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(phrasings_app, name="phrasings")


@phrasings_app.command("check")
def phrasings_check(
    file: Annotated[Path, typer.Argument(help="A phrasings YAML file (`phrasings: {price: [...]}`).")],
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Also refuse phrasings that share half their words or more with a held-out suite message of their kind.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check a phrasings file as `augment --phrasings` will: every problem with its line, exit 2.

    Near copies of the suites' held-out messages are counted (the suites then partly measure
    them); `--strict` refuses them, for a measurement of wording the model never saw."""
    with cli_errors():
        phrasings = load_phrasings(file, strict=strict)
    counts = {k: len(v) for k, v in phrasings.items()}
    near = [f"{kind}[{i}]" for kind, i in near_copies(phrasings)]
    if as_json:
        print_json(
            {
                "file": str(file),
                "phrasings": counts,
                "total": sum(counts.values()),
                "near_held_out": near,
            }
        )
        return
    out.print(f"[green]✓[/] {escape(str(file))}: {sum(counts.values())} phrasings of {len(counts)} kinds")
    if near:
        shown = ", ".join(near[:5]) + (", …" if len(near) > 5 else "")
        out.print(
            f"note: {len(near)} share half their words or more with a held-out suite message of their kind "
            f"({escape(shown)}): the suites' held-out wording partly measures them; `--strict` refuses them"
        )


@phrasings_app.command("write")
def phrasings_write(
    file: Annotated[Path, typer.Argument(help="The YAML file to write (kept and completed if it exists).")],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Teacher model: a litellm string (openai/<name>) or local:<path>.")
    ],
    api_base: Annotated[
        str | None, typer.Option("--api-base", help="Endpoint of a served model, e.g. http://127.0.0.1:8000/v1.")
    ] = None,
    per_kind: Annotated[int, typer.Option("--per-kind", min=1, max=200, help="Phrasings per message kind.")] = 8,
    kinds: Annotated[
        str | None, typer.Option("--kinds", help="Message kinds, comma-separated (default: every kind).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask a teacher model for new viewer phrasings per message kind, keep those that pass the
    checks of `phrasings check` (none of the suites' held-out messages among them), and write
    them to FILE after each kind.

    The model sees each kind's brief and the built-in training templates, never the held-out
    ones. Answers are cached (.harnessctl/cache/phrasings); a rerun keeps what FILE holds and asks
    only for what is missing. Exit 1 when the model wrote no usable phrasing. Review the file
    before training on it."""
    # lazy: the augment package stays off the `harnessctl --help` path
    from harnessctl.augment.phrasing_writer import write_phrasings

    with cli_errors(ValueError):
        wanted = [k.strip() for k in kinds.split(",") if k.strip()] if kinds else None
        backend = resolve_model(model, api_base=api_base)
        if reads_answer_key(backend):  # a reference policy: it answers known cases, not a brief
            raise CLIError(f"--model {model}: the oracle answers cases, it cannot write phrasings; name a model")
        with progress_bars("kinds", enabled=not as_json, console=err) as update:
            report = write_phrasings(
                file,
                model,
                per_kind=per_kind,
                kinds=wanted,
                backend=backend,
                cache_dir=Path(".harnessctl") / "cache" / "phrasings",
                on_kind=lambda done, total, _kind: update("kinds", done, total),
            )
        if not report.kept:
            refused = ", ".join(f"{k} {v}" for k, v in sorted(report.refused.items())) or "no lines"
            raise CLIError(f"{model} wrote no usable phrasing ({refused}); nothing written", code=1)
    if as_json:
        print_json(report.to_dict())
        return
    total = sum(report.kept.values())
    out.print(
        f"[green]✓[/] {escape(str(file))}: {total} phrasings of {len(report.kept)} kinds "
        f"({report.added} new, {report.calls} model calls)"
    )
    if report.refused:
        out.print("  refused: " + ", ".join(f"{k} {v}" for k, v in sorted(report.refused.items())))
    if report.short:
        out.print(
            f"  [yellow]fewer than {per_kind}:[/] {escape(', '.join(report.short))} (the model's other lines were refused)"
        )
    out.print(f"  review it, then: harnessctl augment --trajectories N --phrasings {escape(str(file))}")
