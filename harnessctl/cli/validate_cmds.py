"""``harnessctl init`` and ``harnessctl validate``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from harnessctl.harness.check import HarnessCheck, check_harness_dir
from harnessctl.harness.errors import Issue
from harnessctl.harness.starter import harness_name_for, init_repository, write_starter
from harnessctl.harness.validate import issue_under

from .common import HarnessOpt, JsonOpt, resolve_harness_path
from .output import EXIT_BAD_INPUT, EXIT_OK, CLIError, cli_errors, out, print_json


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("validate")(validate)


def init(
    path: Annotated[Path, typer.Argument(help="Folder to create the harness in (created if missing).")] = Path("."),
    name: Annotated[str | None, typer.Option("--name", help="Harness name. Default: the folder's name.")] = None,
    use_git: Annotated[
        bool,
        typer.Option(
            "--git/--no-git",
            help="Outside a git repository, create one in the folder and commit the starter (versions live in git).",
        ),
    ] = True,
    json_output: JsonOpt = False,
) -> None:
    """Create a new, valid, commented starter harness. Never overwrites an existing one.

    Outside a git repository it also runs `git init` there and commits the starter, since `tag`
    and `diff` need one; inside one it says the command that commits it."""
    with cli_errors():
        files = write_starter(path, name=name)
        git = init_repository(path, files) if use_git else None
    harness_name = name or harness_name_for(path)
    if json_output:
        print_json({"path": str(path), "name": harness_name, "files": files, "git": git})
        return
    out.print(
        f"[green]✓[/] created harness [bold]{escape(harness_name)}[/] in {escape(str(path))} ({len(files)} files)"
    )
    if git and git["committed"]:
        out.print(
            f"  a new git repository in {escape(str(path))} holds it (first commit made; `harnessctl tag v1` next)"
        )
    elif git and git["next"]:
        where = f"it lives in the repository {escape(git['repository'])}; " if git["repository"] else ""
        out.print(
            f"  versions live in git: {where}commit it with [bold]{escape(git['next'])}[/] before `harnessctl tag`"
        )
    out.print(f"  next: edit the YAML files, then run [bold]harnessctl validate {escape(str(path))}[/]")


def validate(
    path: Annotated[Path | None, typer.Argument(help="Harness folder (same as -H).", show_default=False)] = None,
    harness: HarnessOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Check every harness file against its schema and across files. Exit 0 valid, 2 invalid."""
    with cli_errors():
        if path is not None and harness is not None and path != harness:
            raise CLIError("give the harness folder once: as PATH or with -H, not both")
        root = resolve_harness_path(path if path is not None else harness)
        check = check_harness_dir(root)
    issues = [issue_under(root, i) for i in check.issues]
    if json_output:
        print_json(_as_json(root, check, issues))
    elif check.ok:
        out.print(f"[green]✓[/] {escape(_summary(check))}")
    else:
        for issue in issues:
            out.print(_styled(issue))
        count = len(issues)
        out.print(f"[red]✗[/] {escape(str(root))}: {count} problem{'s' if count != 1 else ''}")
    raise typer.Exit(EXIT_OK if check.ok else EXIT_BAD_INPUT)


def _summary(check: HarnessCheck) -> str:
    h = check.harness
    assert h is not None
    version = f" {h.version}" if h.version else ""
    return (
        f"{h.name}{version}: {len(h.skills)} skills, {len(h.tools)} tools, "
        f"{len(h.prompt.blocks)} blocks, {len(h.prompt.constraints)} constraints"
    )


def _styled(issue: Issue) -> str:
    where = issue.file
    if issue.line is not None:
        where += f":{issue.line}" + (f":{issue.col}" if issue.col is not None else "")
    text = f"[bold]{escape(where)}[/]: [red]{escape(issue.message)}[/]"
    if issue.path:
        text += f" [dim]({escape(issue.path)})[/]"
    if issue.hint:
        text += f" — [cyan]{escape(issue.hint)}[/]"
    return text


def _as_json(root: Path, check: HarnessCheck, issues: list[Issue]) -> dict[str, object]:
    h = check.harness
    return {
        "valid": check.ok,
        "path": str(root),
        "name": h.name if h else None,
        "version": h.version if h else None,
        "counts": (
            {
                "skills": len(h.skills),
                "tools": len(h.tools),
                "blocks": len(h.prompt.blocks),
                "constraints": len(h.prompt.constraints),
            }
            if h
            else None
        ),
        "issues": [dataclasses.asdict(i) for i in issues],
    }
