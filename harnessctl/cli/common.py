"""Options and helpers shared by several commands (Annotated aliases, harness discovery)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harnessctl.harness.loader import is_harness_dir

from .output import CLIError

HarnessOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--harness",
        "-H",
        help="Harness folder. Default: the only harness under ./harnesses, or the current folder if it holds harness.yaml.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of the human view.")]


def resolve_harness_path(path: Path | None) -> Path:
    """The harness folder a command works on (see ``HarnessOpt``).

    >>> resolve_harness_path(Path("harnesses/livecommerce"))   # doctest: +SKIP
    PosixPath('harnesses/livecommerce')
    """
    if path is not None:
        if not path.exists():
            raise CLIError(f"{path}: no such harness folder (check -H/--harness)")
        if path.is_file():
            folder = path.parent
            hint = f"pass the folder that holds it: -H {folder}" if is_harness_dir(folder) else "pass a harness folder (the one that holds harness.yaml)"
            raise CLIError(f"{path}: is a file, not a harness folder — {hint}")
        if not is_harness_dir(path):
            raise CLIError(f"{path}: not a harness folder (no harness.yaml); run `harnessctl init {path}` to create one")
        return path
    cwd = Path.cwd()
    if is_harness_dir(cwd):
        return cwd
    found = sorted(p for p in (cwd / "harnesses").glob("*") if is_harness_dir(p)) if (cwd / "harnesses").is_dir() else []
    if len(found) == 1:
        return found[0].relative_to(cwd)
    if not found:
        raise CLIError("no harness found: pass -H PATH, run inside a harness folder, or create one with `harnessctl init`")
    names = ", ".join(str(p.relative_to(cwd)) for p in found)
    raise CLIError(f"several harnesses under ./harnesses ({names}): choose one with -H PATH")
