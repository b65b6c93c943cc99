"""The command line is a thin layer: each command's body checks its options, calls the library and
prints, in :data:`MAX_BODY_LINES` lines at most (read from the source with ``ast``). Work a command
needs goes into a library function (usable from Python), printing into a helper beside it."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = REPO / "harnessctl" / "cli"
#: The most lines a command function's body (after its docstring) may have.
MAX_BODY_LINES = 40


def _commands(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The functions a Typer app runs: decorated with ``@app.command(...)``/``@app.callback(...)``
    or registered as ``app.command("name")(function)``; by command name."""
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and node.args:
            inner, arg = node.func, node.args[0]
            if isinstance(inner.func, ast.Attribute) and inner.func.attr == "command" and isinstance(arg, ast.Name):
                if arg.id in functions:
                    name = inner.args[0].value if inner.args else arg.id
                    found[f"{ast.unparse(inner.func.value)} {name}"] = functions[arg.id]
    for f in functions.values():
        for d in f.decorator_list:
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ("command", "callback"):
                name = d.args[0].value if d.args else f.name
                found[f"{ast.unparse(d.func.value)} {name}"] = f
    return found


def _body_lines(f: ast.FunctionDef) -> int:
    body = f.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def command_bodies() -> dict[str, int]:
    """``{"file.py: app name": lines}`` for every command of the command line."""
    lengths = {}
    for path in sorted(CLI.glob("*.py")):
        for name, f in _commands(ast.parse(path.read_text(encoding="utf-8"))).items():
            lengths[f"{path.name}: {name}"] = _body_lines(f)
    return lengths


def test_the_commands_are_found():
    names = command_bodies()
    assert "loop_cmds.py: app loop" in names and "eval_cmds.py: eval_app eval_cmd" in names
    assert "eval_cmds.py: judge_app calibrate" in names and "model_cmds.py: model_app list" in names
    assert len(names) > 30


def test_no_command_body_is_longer_than_the_limit():
    long = {name: n for name, n in command_bodies().items() if n > MAX_BODY_LINES}
    assert long == {}, f"command bodies over {MAX_BODY_LINES} lines: move the work into the library"
