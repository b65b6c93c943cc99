"""Options and helpers shared by several commands (Annotated aliases, harness discovery, the
model a command uses). ``run`` and ``eval`` take their model options from here, so ranges,
``--api-key-env`` and timeouts mean the same in both."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harnessctl.harness.loader import is_harness_dir
from harnessctl.models.registry import MODEL_ENV, ORACLE, default_model_source, expand_model_spec

from .output import CLIError, err

HarnessOpt = Annotated[
    Path | None,
    typer.Option(
        "--harness",
        "-H",
        help="Harness folder. Default: the only harness under ./harnesses, or the current folder if it holds harness.yaml.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of the human view.")]

# -- the model options of `run` and `eval` ------------------------------------------------------
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="oracle, local:<path> or a litellm string such as openai/<name> or anthropic/<model>. "
        "Default: $HARNESSCTL_MODEL, else the trained default, else the shipped HAT model, else the oracle (the reference policy, which reads the answer key).",
    ),
]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        help="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (with --model openai/<name>).",
    ),
]
ApiKeyEnvOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Name of the environment variable that holds the API key (the key itself is never passed on the command line or recorded).",
    ),
]
TemperatureOpt = Annotated[
    float,
    typer.Option(
        "--temperature", min=0.0, max=2.0, help="Sampling temperature, 0 to 2 (0: greedy; use > 0 with --repeat)."
    ),
]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Most tokens per model turn.")]
CaseTimeoutOpt = Annotated[
    str,
    typer.Option(
        "--case-timeout",
        help="Give up on one case (every model turn and tool call of it) after this long, e.g. 120s or 2m.",
    ),
]
RetriesOpt = Annotated[
    int,
    typer.Option(
        "--retries", min=0, help="Retries of a model call that failed in transport (connection, timeout, 429, 5xx)."
    ),
]


def choose_model(model: str | None, *, quiet: bool = False) -> str:
    """The model string a command uses: ``--model``, else the default (see
    :func:`harnessctl.models.registry.default_model_spec`). When the default is used, one line on
    stderr says which model it is and where it came from, so that no run silently uses the oracle.

    >>> choose_model("openai/tiny")
    'openai/tiny'
    """
    if model:
        return model

    spec, source = default_model_source()
    if not quiet:
        where = {
            "env": f"from ${MODEL_ENV}",
            "trained": "the trained default",
            "shipped": "the shipped HAT model",
            "oracle": f"no --model, no ${MODEL_ENV}, no trained default and no shipped model",
        }[source]
        if spec == ORACLE:
            err.print(
                f"[yellow]model: oracle[/] ({where}) — the reference policy, which reads the answer key; "
                "not a model. Pass --model to evaluate a model."
            )
        else:
            err.print(f"[dim]model: {spec} ({where}; pass --model to choose another)[/]")
    return spec


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
            hint = (
                f"pass the folder that holds it: -H {folder}"
                if is_harness_dir(folder)
                else "pass a harness folder (the one that holds harness.yaml)"
            )
            raise CLIError(f"{path}: is a file, not a harness folder — {hint}")
        if not is_harness_dir(path):
            raise CLIError(
                f"{path}: not a harness folder (no harness.yaml); run `harnessctl init {path}` to create one"
            )
        return path
    cwd = Path.cwd()
    if is_harness_dir(cwd):
        return cwd
    found = (
        sorted(p for p in (cwd / "harnesses").glob("*") if is_harness_dir(p)) if (cwd / "harnesses").is_dir() else []
    )
    if len(found) == 1:
        return found[0].relative_to(cwd)
    if not found:
        raise CLIError(
            "no harness found: pass -H PATH, run inside a harness folder, or create one with `harnessctl init`"
        )
    names = ", ".join(str(p.relative_to(cwd)) for p in found)
    raise CLIError(f"several harnesses under ./harnesses ({names}): choose one with -H PATH")


def checkpoint_folder(spec: str) -> str:
    """The folder a ``--model``/``--teacher`` names: a path, ``local:PATH`` or ``shipped:NAME``."""
    return expand_model_spec(spec).removeprefix("local:")
