"""Fixtures shared by every test room. Expensive ones are session-scoped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
LIVECOMMERCE = REPO_ROOT / "harnesses" / "livecommerce"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def livecommerce_path() -> Path:
    return LIVECOMMERCE


@pytest.fixture
def livecommerce():
    """A fresh in-memory copy of the shipped harness (tests may perturb it)."""
    from harnessctl.harness import load_harness

    return load_harness(LIVECOMMERCE, validate=False)
