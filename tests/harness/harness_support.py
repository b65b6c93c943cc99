"""Helpers shared by the validation, bad-input, save and init/validate CLI tests."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from pathlib import Path
from unittest import mock

import pytest

from harnessctl.sim.backends import SIM_BACKENDS

REPO_ROOT = Path(__file__).resolve().parents[2]
LIVECOMMERCE = REPO_ROOT / "harnesses" / "livecommerce"


def _unused_backend(world, args):  # pragma: no cover - never called by validation
    raise AssertionError("validation never calls a backend")


@pytest.fixture
def sim_backends():
    """The simulator's backend names, registered (by the simulator itself when it exists)."""
    from harnessctl.harness.backends import backends_registered

    with backends_registered({name: _unused_backend for name in SIM_BACKENDS}):
        yield set(SIM_BACKENDS)


def copy_harness(dest: Path, src: Path = LIVECOMMERCE) -> Path:
    """A writable copy of a harness folder."""
    shutil.copytree(src, dest)
    return dest


def edit(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    """Replace ``old`` by ``new`` in ``root/rel``; fails loudly if ``old`` is not there."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``root``: a content hash (files) and mtime — to prove nothing was written."""
    state: dict[str, tuple[str, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            rel = str(p.relative_to(root))
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "-"
            state[rel] = (digest, st.st_mtime_ns)
    return state


@functools.cache
def _cli_command():
    from typer.main import get_command

    from harnessctl.cli.main import app

    return get_command(app)


def run_cli(*args: str, runner=None):
    """Run ``harnessctl ARGS`` in-process through typer's CliRunner, on the real app.

    Typer rebuilds the click command from the app on every ``invoke`` (~40 ms with every
    command registered); tests that invoke it a thousand times build it once.
    """
    import typer.testing

    from harnessctl.cli.main import app

    runner = runner or typer.testing.CliRunner()
    with mock.patch.object(typer.testing, "_get_command", lambda _app: _cli_command()):
        return runner.invoke(app, list(args))
