"""Imports point one way: each layer imports only the layers below it, at module top or inside a
function (read from the source with ``ast``). The experimental wing (``harnessctl/experimental/``)
is the topmost layer and fenced: nothing outside it imports it, and it imports only the core's
public names."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: From the bottom up.
LAYERS = (
    "harness",
    "models",
    "runtime",
    "sim",
    "augment",
    "eval",
    "loop",
    "trainer",
    "experiment",
    "cli",
    "experimental",
)
WING = "harnessctl.experimental"
#: Where the core's modules live (none may import the wing; benchmarks and tests may).
CORE_ROOTS = ("harnessctl", "trainer")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "trainer":
        return "trainer"
    if parts[0] == "harnessctl" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return None


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` names, relative imports resolved against ``package``."""
    if node.level:
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module or ""


def _imports(path: Path, package: str):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, package)
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


def _modules(roots: tuple[str, ...]):
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            yield path, ".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts[:-1])


def _in_wing(module: str) -> bool:
    return module == WING or module.startswith(WING + ".")


def _dynamic_imports(path: Path):
    """``importlib.import_module("...")`` and ``__import__("...")`` with a constant name."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                yield node.lineno, node.args[0].value


def imports_of_the_wing() -> list[str]:
    found = []
    for path, package in _modules(CORE_ROOTS):
        if path.is_relative_to(REPO / "harnessctl" / "experimental"):
            continue
        for line, module in [*_imports(path, package), *_dynamic_imports(path)]:
            if _in_wing(module):
                found.append(f"{path.relative_to(REPO)}:{line}: imports {module}")
    return sorted(set(found))


def _core(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "trainer" or (parts[0] == "harnessctl" and not _in_wing(module))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_used(path: Path, package: str) -> list[str]:
    """Names starting with ``_`` (not dunders) that ``path`` imports from the core, or reads as an
    attribute of a core module it imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, modules = [], set()  # modules: local names bound to core modules
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in (a for a in node.names if _core(a.name)):
                modules.add(alias.asname or alias.name.split(".")[0])
                if any(map(_private, alias.name.split("."))):
                    found.append(f"{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and _core(module := _from_module(node, package)):
            names = [module] if any(map(_private, module.split("."))) else []
            names += [f"{module}.{a.name}" for a in node.names if _private(a.name)]
            found += [f"{node.lineno}: imports {name}" for name in names]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in modules:
                found.append(f"{node.lineno}: reads {node.value.id}.{node.attr}")
    return found


def private_names_the_wing_uses() -> list[str]:
    return sorted(
        f"{path.relative_to(REPO)}:{hit}"
        for path, package in _modules(("harnessctl/experimental",))
        for hit in private_names_used(path, package)
    )


def test_nothing_outside_the_experimental_wing_imports_it():
    assert imports_of_the_wing() == []


def test_the_experimental_wing_uses_only_the_cores_public_names():
    assert private_names_the_wing_uses() == []


def test_the_fence_checks_see_what_they_forbid(tmp_path):
    core = tmp_path / "core.py"
    core.write_text(
        "def f():\n    from harnessctl.experimental.heldout import HeldoutScorer\n"
        "    importlib.import_module('harnessctl.experimental')\n",
        encoding="utf-8",
    )
    assert [m for _, m in _imports(core, "trainer")][0] == "harnessctl.experimental.heldout"
    assert [m for _, m in _dynamic_imports(core)] == ["harnessctl.experimental"]
    wing = tmp_path / "wing.py"
    wing.write_text(
        "import harnessctl.experiment.runner as runner\nfrom trainer.common import _hidden, TrainError\n"
        "from . import _own\nrunner._train_seconds({})\n",
        encoding="utf-8",
    )
    used = private_names_used(wing, "harnessctl.experimental")
    assert used == ["2: imports trainer.common._hidden", "4: reads runner._train_seconds"]


def import_cycles() -> list[list[str]]:
    """Groups of the project's modules that import one another, directly or around a loop (at
    module top or inside a function; a module importing its own package's ``__init__`` aside)."""
    modules: dict[str, tuple[Path, str]] = {}
    for root in CORE_ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            name = ".".join(parts if parts[-1] != "__init__" else parts[:-1])
            modules[name] = (path, ".".join(parts[:-1]))
    graph = {
        name: {m for _, m in _imports(path, package) if m in modules and m != name and not name.startswith(m + ".")}
        for name, (path, package) in modules.items()
    }
    # Tarjan's strongly connected components, iteratively (the graph has hundreds of modules).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return sorted(groups)


def test_no_modules_import_each_other():
    assert import_cycles() == []


def test_the_cycle_check_finds_modules_that_import_each_other(tmp_path, monkeypatch):
    package = tmp_path / "harnessctl" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import thing\n")
    (package / "b.py").write_text("def thing():\n    from harnessctl.demo.c import other\n")
    (package / "c.py").write_text("import harnessctl.demo.a\n")
    (tmp_path / "trainer").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert import_cycles() == [["harnessctl.demo.a", "harnessctl.demo.b", "harnessctl.demo.c"]]
