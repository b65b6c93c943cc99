"""Fixtures of the simulator's tests: the shipped harness (loaded once) and its variants."""

from __future__ import annotations

import pytest

from harnessctl.harness import Harness, load_harness
from harnessctl.sim import load_catalog


@pytest.fixture(scope="session")
def shipped(livecommerce_path) -> Harness:
    """The shipped harness, shared: tests that change it work on ``shipped.copy()``."""
    return load_harness(livecommerce_path)


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()
