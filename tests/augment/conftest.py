"""Shared, session-scoped things for the augmentation tests (expensive ones are built once)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def source(livecommerce_path):
    """The shipped harness, validated. Tests must not modify it (operators work on copies)."""
    from harnessctl.harness import load_harness

    return load_harness(livecommerce_path)


@pytest.fixture(scope="session")
def floors(source):
    from harnessctl.augment import feasible_floors

    return feasible_floors(source)


@pytest.fixture(scope="session")
def sample_cases():
    """Three cases per intent, a third with tool faults (so retries are exercised)."""
    from harnessctl.sim.cases import INTENTS, generate_cases

    return generate_cases(3 * len(INTENTS), seed=4242, faults=0.35)


@pytest.fixture(scope="session")
def canonical_scores(source, sample_cases):
    """The oracle's score on each sample case under the shipped harness."""
    from harnessctl.runtime.loop import run_episode
    from harnessctl.sim.oracle import OracleModel
    from harnessctl.sim.scorer import score_episode

    oracle = OracleModel()
    return {c.id: score_episode(run_episode(source, c, oracle), c).total for c in sample_cases}
