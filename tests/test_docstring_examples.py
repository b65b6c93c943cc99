"""The uses shown in docstrings work: every ``>>>`` example in the library and the trainer runs
(from the repository root, as a user would type it there), except those marked ``+SKIP`` because
they need a trained model, a server or a long run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _modules() -> list[str]:
    names = []
    for package in ("harnessctl", "trainer"):
        root = importlib.import_module(package)
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")]
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(REPO)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed (see above)"
