"""Imports point one way: each layer imports only the layers below it, at module top or inside a
function (read from the source with ``ast``)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: From the bottom up.
LAYERS = ("harness", "models", "runtime", "sim", "augment", "eval", "loop", "trainer", "experiment", "cli")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "trainer":
        return "trainer"
    if parts[0] == "harnessctl" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return None


def _imports(path: Path, package: str):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:  # ``from harnessctl import sim``
                yield node.lineno, f"{module}.{alias.name}"


def upward_imports() -> list[str]:
    found = []
    for root in ("harnessctl", "trainer"):
        for path in sorted((REPO / root).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            package = ".".join(parts[:-1]) if parts[-1] != "__init__" else ".".join(parts[:-1])
            mine = _layer(".".join(parts if parts[-1] != "__init__" else parts[:-1]))
            if mine is None:
                continue
            for line, module in _imports(path, package):
                theirs = _layer(module)
                if theirs is not None and LAYERS.index(theirs) > LAYERS.index(mine):
                    found.append(f"{path.relative_to(REPO)}:{line}: {mine} imports {module} ({theirs})")
    return sorted(set(found))


def test_no_layer_imports_a_layer_above_it():
    assert upward_imports() == []
