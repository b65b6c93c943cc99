"""A semantic harness diff as a reviewer reads it, printed on a rich console: changes grouped by
section (skills, tools, prompt, constraints, hooks), each with its mark, path, a word-level view
of rewordings and the version bump it implies. Used by ``harnessctl diff``, ``harnessctl edit`` and
``harnessctl augment preview``.

>>> from rich.console import Console
>>> from harnessctl.harness.diff import diff_harnesses
>>> print_diff(diff_harnesses(old, new, from_label="v1", to_label="v2"), Console())   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .diff import (
    ADDED,
    ELEMENT_WORDS,
    ELEMENTS,
    KINDS,
    PARAMETERS_CHANGED,
    REMOVED,
    RENAMED,
    REORDERED,
    Change,
    HarnessDiff,
    kept_ratio,
)

_BUMP_STYLE = {"major": "bold red", "minor": "bold yellow", "patch": "bold green", None: "dim"}
_MARK = {ADDED: ("+", "green"), REMOVED: ("-", "red"), RENAMED: ("~", "yellow"), REORDERED: ("↕", "cyan")}
_SECTIONS = (
    ("Skills", ("skill", "rule")),
    ("Tools", ("tool",)),
    ("Prompt", ("prompt_block",)),
    ("Constraints", ("constraint",)),
    ("Hooks", ("hook", "guard")),
    ("Harness", ("harness", "variable", "skill_loader")),
)


def _header(d: HarnessDiff) -> Text:
    t = Text.assemble((d.name, "bold magenta"), f" {d.from_label} → {d.to_label}", " · suggested bump: ")
    t.append(d.bump or "none", style=_BUMP_STYLE[d.bump])
    return t


def print_diff_stat(d: HarnessDiff, console: Console) -> None:
    """Print the number of changes per element and kind (``harnessctl diff --stat``).

    >>> print_diff_stat(diff_harnesses(old, new), Console())   # doctest: +SKIP
    """
    console.print(_header(d))
    counts = d.counts()
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("element")
    for kind in KINDS:
        table.add_column("parameters" if kind == PARAMETERS_CHANGED else kind, justify="right")
    table.add_column("total", justify="right", style="bold")
    for element in ELEMENTS:
        if element in counts:
            row = counts[element]
            table.add_row(element, *[str(row.get(k, "")) for k in KINDS], str(sum(row.values())))
    total = sum(sum(r.values()) for r in counts.values())
    if total:
        console.print(table)
    console.print(f"{total} change{'s' if total != 1 else ''}")


def print_diff(d: HarnessDiff, console: Console) -> None:
    """Print every change of ``d`` grouped by section; rewordings word by word, coloured, or with
    git's ``[-out-]{+in+}`` markers when the console has no colour (a pipe, a file, NO_COLOR).

    >>> print_diff(diff_harnesses(old, new, from_label="v1", to_label="v2"), Console())   # doctest: +SKIP
    """
    plain = console.color_system is None or console.no_color
    console.print(_header(d))
    if d.equal:
        console.print(Text("no semantic differences", style="dim"))
        return
    by_kind: dict[str, int] = {}
    for c in d.changes:
        by_kind[c.kind] = by_kind.get(c.kind, 0) + 1
    console.print(
        Text(
            f"{len(d.changes)} changes: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in by_kind.items()),
            style="dim",
        )
    )
    for title, elements in _SECTIONS:
        changes = [c for c in d.changes if c.element in elements]
        if not changes:
            continue
        console.print()
        console.print(Text(title, style="bold underline"))
        for c in changes:
            for line in _change_lines(c, plain):
                console.print(line)


def _change_lines(c: Change, plain: bool) -> list[Text]:
    sym, colour = _MARK.get(c.kind, ("~", "yellow"))
    word = ELEMENT_WORDS.get(c.element, c.element)
    head = Text(f"  {sym} ", style=colour).append(f"{word} ", style="dim").append(c.path, style="bold")
    impact = Text(f"  [{c.impact}]", style=_BUMP_STYLE.get(c.impact, "dim"))
    lines: list[Text] = []
    if c.kind == ADDED:
        head.append(Text.assemble("  ", _brief(c.to, "green")))
    elif c.kind == REMOVED:
        head.append(Text.assemble("  ", _brief(c.from_, "red strike")))
    elif c.kind == RENAMED:
        head.append("  renamed ").append(str(c.from_), style="red").append(" → ").append(str(c.to), style="green")
    elif c.kind == REORDERED:
        if c.field == "tools":
            head.append(f"  tools reordered: {', '.join(c.from_)} → {', '.join(c.to)}")
        else:
            head.append(f"  {_move_words(c)}")
    elif c.kind == PARAMETERS_CHANGED:
        head.append("  parameters changed")
        head.append(" (breaking)" if c.breaking else " (non-breaking)", style="bold red" if c.breaking else "green")
        for p in c.parameters or []:
            mark = Text("      ! ", style="bold red") if p.breaking else Text("      · ", style="green")
            detail = f"{p.parameter}: {p.kind.replace('_', ' ')}"
            if p.kind not in ("added", "removed", "became_required", "became_optional"):
                detail += f" {_short(p.from_)} → {_short(p.to)}"
            lines.append(mark.append(detail))
    elif c.words is not None:
        head.append(f"  {c.field}" if c.field != "text" else "  reworded")
        lines.append(_word_line(c, plain))
    elif c.element == "skill" and c.field == "tools":
        plus = [t for t in c.to if t not in c.from_]
        minus = [t for t in c.from_ if t not in c.to]
        head.append("  tools")
        for t in plus:
            head.append(f" +{t}", style="green")
        for t in minus:
            head.append(f" -{t}", style="red")
    elif isinstance(c.from_, list) and isinstance(c.to, list):
        head.append(f"  {c.field}:")
        for v in c.to:
            if v not in c.from_:
                head.append(f" +{v}", style="green")
        for v in c.from_:
            if v not in c.to:
                head.append(f" -{v}", style="red")
    else:
        head.append(f"  {c.field} ").append(_short(c.from_), style="red").append(" → ").append(
            _short(c.to), style="green"
        )
    return [head.append_text(impact), *lines]


def _move_words(c: Change) -> str:
    """A reorder as a reviewer reads it: which way, where it now sits (and the positions)."""
    where = f"now after {c.after}" if c.after else "now first"
    if c.from_ == c.to:  # others were added or removed around it: only its neighbours tell
        return f"moved: {where} (position {c.to}, as before)"
    way = "up" if c.to < c.from_ else "down"
    return f"moved {way}: {where} (position {c.from_} → {c.to})"


def _word_line(c: Change, plain: bool) -> Text:
    """The edit, word by word: red strikethrough out, green in — or git's ``[-out-]{+in+}``
    markers when the output has no colour (a pipe, a file, NO_COLOR)."""
    line = Text("      ")
    if kept_ratio(c.words or []) < 0.2:  # rewritten: old then new reads better than confetti
        return line.append(_flat(c.from_), style="red strike").append("\n      ").append(_flat(c.to), style="green")
    for w in c.words or []:
        text = _flat(w.text, keep_edges=True)
        if w.op == "=":
            line.append(text)
        elif plain:
            line.append(f"[-{text}-]" if w.op == "-" else f"{{+{text}+}}")
        else:
            line.append(text, style="red strike" if w.op == "-" else "green")
    return line


def _flat(text: Any, keep_edges: bool = False) -> str:
    s = str(text).replace("\n", " ")
    return s if keep_edges else " ".join(s.split())


def _brief(value: Any, style: str) -> Text:
    if isinstance(value, dict):
        name = value.get("name")
        parts = []
        if name:
            parts.append(f"“{name}”")
        if value.get("description"):
            parts.append(str(value["description"]))
        if "rules" in value:
            parts.append(f"{len(value['rules'])} rules")
        if value.get("tools"):
            parts.append("tools " + ", ".join(value["tools"]))
        if "value" in value and "min" in value:
            parts.append(f"{value['value']} [{value['min']}..{value['max']}]")
        if not parts:
            parts = [f"{k}={v}" for k, v in value.items()]
        return Text(" · ".join(parts), style=style)
    return Text(" ".join(str(value).split()), style=style)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "…"
