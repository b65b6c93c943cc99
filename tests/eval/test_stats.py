"""The numbers a report shows: percentiles, latency budgets, bootstrap intervals, kappa, pass^k."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from harnessctl.eval.stats import (
    binary_rates,
    bootstrap,
    cohen_kappa,
    latency_stats,
    parse_duration,
    pass_hat_k,
    percentile,
)


def test_percentiles_match_numpys_default_method():
    rng = random.Random(0)
    xs = [rng.expovariate(2.0) for _ in range(257)]
    for q in (0, 1, 50, 95, 99, 100):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    assert math.isnan(percentile([], 50))


def test_latency_stats_report_p50_p95_p99_and_the_share_over_budget():
    xs = [0.1] * 90 + [1.0] * 9 + [30.0]
    s = latency_stats(xs, budget_s=15.0)
    assert (s.n, s.p50, s.over_budget) == (100, 0.1, 0.01)
    assert s.p95 == pytest.approx(1.0) and s.p99 == pytest.approx(1.0 + 0.01 * 29.0)
    assert latency_stats(xs).over_budget is None
    assert latency_stats([]).to_dict()["p50"] is None  # JSON-safe


def test_durations_accept_the_units_people_type():
    assert parse_duration("15s") == 15.0 and parse_duration("250ms") == 0.25 and parse_duration("1.5m") == 90.0
    with pytest.raises(ValueError, match="use e.g. 15s"):
        parse_duration("fast")


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    data = [1] * 70 + [0] * 30
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    a = bootstrap(data, mean, seed=3)
    assert a == bootstrap(data, mean, seed=3)
    assert a.low < 0.7 < a.high and 0.55 < a.low and a.high < 0.85
    one = bootstrap([5.0], mean)
    assert (one.low, one.value, one.high) == (5.0, 5.0, 5.0)


def test_cohen_kappa_agrees_with_the_textbook_example():
    # 50 items: both yes 20, a yes/b no 5, a no/b yes 10, both no 15 -> po 0.7, pe 0.5, kappa 0.4
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa([1, 1], [1, 1]) == 1.0


def test_tpr_and_tnr_are_per_class():
    rates = binary_rates([True, True, True, False], [True, True, False, True])
    assert rates == {"agreement": 0.5, "tpr": pytest.approx(2 / 3), "tnr": 0.0}


def test_pass_hat_k_is_the_chance_all_k_draws_succeed():
    assert pass_hat_k(4, 4, 4) == 1.0
    assert pass_hat_k(3, 4, 4) == 0.0
    assert pass_hat_k(2, 4, 1) == 0.5
    with pytest.raises(ValueError):
        pass_hat_k(1, 2, 3)
