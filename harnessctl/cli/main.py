"""The ``harnessctl`` command line: a thin layer over the library.

Each command group lives in its own module with a ``register(app)`` function; this file only
composes them. Heavy libraries (litellm, torch, transformers) are imported inside commands.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Annotated

import typer

from harnessctl import __version__

app = typer.Typer(
    name="harnessctl",
    help="Manage, evaluate and train LLM agents whose harness evolves every week.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"harnessctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Manage, evaluate and train LLM agents whose harness evolves every week."""


# Command modules, in the order their commands appear in --help.
COMMAND_MODULES = (
    "harnessctl.cli.validate_cmds",  # init, validate
    "harnessctl.cli.interchange_cmds",  # import skills|tools, export skills|tools
    "harnessctl.cli.version_cmds",  # show, log, tag, diff
    "harnessctl.cli.run_cmds",  # run, serve, model init
    "harnessctl.cli.model_cmds",  # model list, model ship
    "harnessctl.cli.augment_cmds",  # augment
    "harnessctl.cli.phrasings_cmds",  # phrasings check|write
    "harnessctl.cli.eval_cmds",  # eval, compare, report, judge
    "harnessctl.cli.train_cmds",  # train base|sft|distill|rl
    "harnessctl.cli.experiment_cmds",  # experiment hat
    "harnessctl.cli.loop_cmds",  # diagnose, edit, loop, release, rollback, bench latency
)

for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _e:  # a room not built yet
        if _e.name != _name:
            raise
        continue
    _mod.register(app)


def _one_line_per_paragraph(text: str) -> str:
    """Join the line breaks inside each paragraph; keep blank lines, list items and ``\\b`` blocks.

    >>> _one_line_per_paragraph("Compare two runs.\\n\\nExit 1 when a suite\\nscores lower.")
    'Compare two runs.\\n\\nExit 1 when a suite scores lower.'
    """
    paragraphs = inspect.cleandoc(text).split("\n\n")
    joined = [p if p.startswith("\b") else re.sub(r"\n(?!- )", " ", p) for p in paragraphs]
    return "\n\n".join(joined)


def _unwrap_help(group: typer.Typer) -> None:
    # Typer's rich help keeps a docstring's single line breaks, so prose wrapped at the source's
    # width shows broken mid-sentence at any other terminal width. The terminal wraps it instead.
    for info in group.registered_commands:
        text = info.help or (info.callback.__doc__ if info.callback else None)
        if text:
            info.help = _one_line_per_paragraph(text)
    for sub in group.registered_groups:
        _unwrap_help(sub.typer_instance)


_unwrap_help(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
