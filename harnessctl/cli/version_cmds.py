"""``harnessctl show | log | tag | diff``: the harness's versions in git and what changed.

Each command resolves references with :class:`~harnessctl.harness.store.HarnessStore`, calls
one library function and prints a rich view or ``--json``. ``diff`` exits like diff(1): 0 when
equal, 1 when different, 2 on error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from harnessctl.harness.diff import diff_harnesses
from harnessctl.harness.diff_view import print_diff, print_diff_stat
from harnessctl.harness.model import Harness
from harnessctl.harness.store import HarnessStore, ResolvedHarness

from .common import HarnessOpt, JsonOpt, resolve_harness_path
from .output import EXIT_DIFFERENT, EXIT_OK, cli_errors, out, print_json

StatOpt = Annotated[bool, typer.Option("--stat", help="Print the number of changes per element kind only.")]


def register(app: typer.Typer) -> None:
    app.command("show")(show)
    app.command("log")(log)
    app.command("tag")(tag)
    app.command("diff")(diff)


def _store(harness: Path | None, refs: list[str | None]) -> HarnessStore:
    """The store for ``-H`` — not needed (and not required) when every reference is a folder."""
    if harness is None and refs and all(r is not None and Path(r).is_dir() for r in refs):
        return HarnessStore(None)
    return HarnessStore(resolve_harness_path(harness))


# -- show --------------------------------------------------------------------------------


def show(
    rev: Annotated[
        str | None,
        typer.Argument(
            help="A version (v2), git revision (HEAD~1, a sha, a branch) or folder. Default: the working folder."
        ),
    ] = None,
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the harness at a version, commit or folder as a readable tree."""
    with cli_errors():
        resolved = _store(harness, [rev] if rev is not None else []).resolve(rev)
    if as_json:
        print_json({"ref": resolved.to_dict(), "harness": _harness_dict(resolved.harness)})
        return
    out.print(_harness_tree(resolved), soft_wrap=False)  # wrap long rules, never crop them


def _harness_dict(h: Harness) -> dict[str, Any]:
    from dataclasses import asdict

    d = asdict(h)
    d.pop("root", None)
    d.pop("sources", None)
    return d


def _name_of(key: str, name: str) -> Text:
    t = Text(key, style="bold")
    if name != key:
        t.append(f" “{name}”", style="cyan")
    return t


def _harness_tree(r: ResolvedHarness) -> Tree:
    h = r.harness
    title = Text(h.name, style="bold magenta")
    if h.version:
        title.append(f" {h.version}", style="bold")
    if r.kind == "folder":
        where = f"folder {r.label}"
    elif r.label == h.version:
        where = f"commit {r.commit[:7] if r.commit else '?'}"
    else:
        where = f"{r.label} @ {r.commit[:7] if r.commit else '?'}"
    title.append(f" · {where}", style="dim")
    root = Tree(title)
    if h.description:
        root.add(Text(h.description, style="italic"))
    if h.variables:
        root.add(
            Text("variables: ", style="bold").append(
                ", ".join(f"{k}={v}" for k, v in h.variables.items()), style="default"
            )
        )
    root.add(
        Text("skill loader: ", style="bold")
        .append_text(_name_of(h.skill_loader.key, h.skill_loader.name))
        .append(f" — {h.skill_loader.description}")
    )

    blocks = root.add(Text(f"prompt blocks ({len(h.prompt.blocks)})", style="bold blue"))
    for i, b in enumerate(h.prompt.blocks, 1):
        blocks.add(Text(f"{i}. ", style="dim").append(b.key, style="bold").append(f": {' '.join(b.text.split())}"))
    constraints = root.add(Text(f"constraints ({len(h.prompt.constraints)})", style="bold blue"))
    for c in h.prompt.constraints.values():
        line = (
            Text(c.key, style="bold")
            .append(f" = {c.value}", style="green")
            .append(f"  [{c.min}..{c.max}]", style="dim")
        )
        if c.description:
            line.append(f"  {c.description}")
        constraints.add(line)

    skills = root.add(Text(f"skills ({len(h.skills)})", style="bold blue"))
    for s in h.skills:
        node = skills.add(_name_of(s.key, s.name).append(f" — {s.description}"))
        for rule in s.rules:
            node.add(Text(rule.key, style="yellow").append(f": {' '.join(rule.text.split())}"))
        if s.tools:
            node.add(Text("tools: ", style="dim").append(", ".join(s.tools)))

    tools = root.add(Text(f"tools ({len(h.tools)})", style="bold blue"))
    for t in h.tools:
        node = tools.add(
            _name_of(t.key, t.name)
            .append(f" — {t.description}")
            .append(f"  ({t.backend}, {t.timeout_s:g}s)", style="dim")
        )
        props = t.parameters.get("properties") or {}
        required = set(t.parameters.get("required") or [])
        for pname, schema in props.items():
            schema = schema if isinstance(schema, dict) else {}
            line = Text(pname + ("*" if pname in required else ""), style="bold" if pname in required else "")
            line.append(f": {schema.get('type', 'any')}", style="green")
            if "enum" in schema:
                line.append(f" {schema['enum']}", style="dim")
            if schema.get("description"):
                line.append(f" — {schema['description']}")
            node.add(line)

    hooks = root.add(Text("hooks", style="bold blue"))
    retry = h.hooks.retry
    hooks.add(
        Text("retry: ", style="bold").append(
            f"max_attempts {retry.max_attempts}, on {', '.join(retry.on)}, backoff {retry.backoff_s:g}s — {' '.join(retry.feedback_template.split())}"
        )
    )
    m = h.hooks.message
    hooks.add(
        Text("message: ", style="bold").append(
            f"tool results as {m.tool_result_format}, skill header “{m.skill_header}”"
        )
    )
    for g in h.hooks.guards:
        detail = [f"action {g.action}"]
        if g.constraint:
            detail.append(f"constraint {g.constraint}")
        if g.limit is not None:
            detail.append(f"limit {g.limit}")
        if g.phrases:
            detail.append("phrases " + ", ".join(g.phrases))
        hooks.add(Text(f"guard {g.type}: ", style="bold").append(", ".join(detail)))
    return root


# -- log ---------------------------------------------------------------------------------


def log(
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
    max_count: Annotated[
        int | None, typer.Option("--max-count", "-n", min=1, help="Show only the newest N entries.")
    ] = None,
) -> None:
    """List the versions and changes of the harness, newest first, with what changed."""
    with cli_errors():
        store = _store(harness, [])
        entries = store.log(limit=max_count)
        versions = store.list_versions()
    if as_json:
        print_json(
            {"path": store.rel, "versions": [v.to_dict() for v in versions], "entries": [e.to_dict() for e in entries]}
        )
        return
    table = Table(title=f"history of {store.rel or '.'}", title_justify="left", expand=False)
    table.add_column("version", style="bold")
    table.add_column("date", style="dim", no_wrap=True)
    table.add_column("commit", style="cyan", no_wrap=True)
    table.add_column("summary")
    for e in entries:
        label = Text(e.label, style="bold magenta" if e.version else "dim")
        table.add_row(label, e.date.strftime("%Y-%m-%d %H:%M"), e.commit[:7], Text(e.summary))
    if not entries:
        out.print(
            "no commits touch this harness yet — commit it (git add, git commit), then mark a version with `harnessctl tag v1`"
        )
        return
    out.print(table)


# -- tag ---------------------------------------------------------------------------------


def tag(
    version: Annotated[str, typer.Argument(help="The new version name: v<number> (v4) or semver (1.4.0).")],
    message: Annotated[
        str, typer.Option("--message", "-m", help="What this version changes, for the commit and the tag.")
    ] = "",
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Mark the committed state of the harness as VERSION (commit `version:` + annotated tag)."""
    with cli_errors():
        v = _store(harness, []).tag(version, message)
    if as_json:
        print_json(v.to_dict())
        return
    out.print(
        Text.assemble(
            ("tagged ", ""),
            (v.name, "bold magenta"),
            (f" at {v.commit[:7]}", "cyan"),
            (f" (git tag {v.tag}) — {v.message}", "dim"),
        )
    )


# -- diff --------------------------------------------------------------------------------


def diff(
    a: Annotated[str, typer.Argument(help="From: a version, git revision or folder.")],
    b: Annotated[str, typer.Argument(help="To: a version, git revision or folder.")],
    harness: HarnessOpt = None,
    as_json: JsonOpt = False,
    stat: StatOpt = False,
) -> None:
    """Explain what changed between two harnesses. Exit 0 equal, 1 different, 2 error."""
    with cli_errors():
        store = _store(harness, [a, b])
        ra, rb = store.resolve(a), store.resolve(b)
        d = diff_harnesses(ra.harness, rb.harness, from_label=ra.label, to_label=rb.label)
    if as_json:
        print_json(d.to_dict())
    elif stat:
        print_diff_stat(d, out)
    else:
        print_diff(d, out)
    raise typer.Exit(EXIT_OK if d.equal else EXIT_DIFFERENT)
