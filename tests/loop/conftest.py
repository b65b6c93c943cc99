"""Fixtures of the loop room: a failing run of a deliberately weakened model, shared by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LIVECOMMERCE, REPO_ROOT

from .support import ShortRuleSpanModel

EVALS = REPO_ROOT / "evals"


@pytest.fixture(scope="session")
def weak_run(tmp_path_factory: pytest.TempPathFactory):
    """The short-rule-span model on 30 livestream + 30 robustness cases of the shipped harness:
    it misses the calls that a skill's third or later rule asks for."""
    from harnessctl.loop.evaluate import evaluate_items, standard_items

    runs = tmp_path_factory.mktemp("weak-runs")
    return evaluate_items(
        standard_items(["livestream", "robustness"], EVALS, limit=30),
        model="short-rule-span",
        backend=ShortRuleSpanModel(),
        harness_path=LIVECOMMERCE,
        runs_dir=runs,
        run_id="weak",
        cache=False,
        evals_dir=EVALS,
    )


@pytest.fixture
def evals_dir() -> Path:
    return EVALS
