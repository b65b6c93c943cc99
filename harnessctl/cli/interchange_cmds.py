"""``harnessctl import skills|tools`` and ``harnessctl export skills|tools``: Agent Skills
folders, MCP tool lists and OpenAI tools in and out of a harness folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from harnessctl.harness.diff_view import print_diff
from harnessctl.harness.interchange import ImportResult, export_skills, export_tools, import_skills, import_tools

from .common import HarnessOpt, JsonOpt, resolve_harness_path
from .output import CLIError, cli_errors, err, out, print_json

import_app = typer.Typer(help="Bring skills and tools written elsewhere into a harness.", no_args_is_help=True)
export_app = typer.Typer(help="Write a harness's skills and tools in other formats.", no_args_is_help=True)

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Check and show the diff; write nothing.")]


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
    app.add_typer(export_app, name="export")
    import_app.command("skills")(import_skills_cmd)
    import_app.command("tools")(import_tools_cmd)
    export_app.command("skills")(export_skills_cmd)
    export_app.command("tools")(export_tools_cmd)


def import_skills_cmd(
    folders: Annotated[list[Path], typer.Argument(help="Agent Skills folders (each holds a SKILL.md).")],
    harness: HarnessOpt = None,
    dry_run: DryRunOpt = False,
    json_output: JsonOpt = False,
) -> None:
    """Import Agent Skills folders as skills: all or nothing, showing the semantic diff.

    The body's list items and paragraphs become rules; references/ and examples/ are copied and
    served by the skill loader on request; scripts/ are never run (recorded as inert files).
    """
    with cli_errors():
        result = import_skills(resolve_harness_path(harness), list(folders), dry_run=dry_run)
    _show(result, json_output, dry_run)


def import_tools_cmd(
    file: Annotated[Path, typer.Argument(help="An MCP tools/list result or an OpenAI tools list (JSON).")],
    harness: HarnessOpt = None,
    bind: Annotated[
        list[str] | None,
        typer.Option(
            "--bind", help="NAME=BACKEND: bind an imported tool to a backend, e.g. get_coupons=sim.get_promotions."
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    json_output: JsonOpt = False,
) -> None:
    """Import tools (format detected); tools not bound to a backend are named, and validate says how to bind them."""
    with cli_errors():
        bindings = _bindings(bind or [])
        result = import_tools(resolve_harness_path(harness), file, bind=bindings, dry_run=dry_run)
    _show(result, json_output, dry_run)


def export_skills_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write one Agent Skills folder per skill into.")],
    harness: HarnessOpt = None,
    skill: Annotated[
        list[str] | None, typer.Option("--skill", help="Export only this skill (key or name); repeatable.")
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """Write each skill as an Agent Skills folder (SKILL.md and its files)."""
    with cli_errors():
        result = export_skills(resolve_harness_path(harness), out_dir, only=skill)
    if json_output:
        print_json({"written": result.written, "warnings": result.warnings})
        return
    _warn(result.warnings)
    out.print(f"[green]✓[/] exported {len(result.written)} skill folder(s) to {escape(str(out_dir))}")


def export_tools_cmd(
    fmt: Annotated[str, typer.Option("--format", help="mcp (a tools/list result) or openai (a tools list).")] = "mcp",
    harness: HarnessOpt = None,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write the JSON here instead of stdout.")] = None,
) -> None:
    """Print (or write) the harness's tools as an MCP tools/list result or an OpenAI tools list."""
    with cli_errors():
        data, warnings = export_tools(resolve_harness_path(harness), fmt)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        if out_file is not None:
            out_file.write_text(text, encoding="utf-8")
    _warn(warnings)
    if out_file is None:
        typer.echo(text, nl=False)
    else:
        err.print(f"[green]✓[/] wrote {escape(str(out_file))}")


def _bindings(pairs: list[str]) -> dict[str, str]:
    bindings = {}
    for pair in pairs:
        name, sep, backend = pair.partition("=")
        if not sep or not name or not backend:
            raise CLIError(f"--bind {pair}: expected NAME=BACKEND, e.g. --bind get_coupons=sim.get_promotions")
        bindings[name.strip()] = backend.strip()
    return bindings


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        err.print(f"[yellow]warning:[/] {escape(w)}")


def _show(result: ImportResult, json_output: bool, dry_run: bool) -> None:
    if json_output:
        print_json(result.to_dict())
        return
    _warn(result.warnings)
    print_diff(result.diff, out)
    if dry_run:
        out.print("[dim]dry run: nothing written[/]")
    else:
        out.print(f"[green]✓[/] {escape(result.root)}: {len(result.written)} file(s) written")
