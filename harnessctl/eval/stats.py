"""Statistics the eval room reports: percentiles, bootstrap intervals, agreement, pass^k.

Pure functions over plain numbers, seeded where random, so a report is reproducible.

>>> percentile([1.0, 2.0, 3.0, 4.0], 50)
2.5
>>> round(cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]), 3)
0.5
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics
    (numpy's default method); ``nan`` for no values.

    >>> percentile([10.0], 99)
    10.0
    """
    xs = sorted(values)
    if not xs:
        return float("nan")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass
class LatencyStats:
    """Latency of whole replies, in seconds."""

    n: int
    p50: float
    p95: float
    p99: float
    mean: float
    max: float
    budget_s: float | None = None
    over_budget: float | None = None  # share of replies slower than the budget

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def latency_stats(latencies: Sequence[float], budget_s: float | None = None) -> LatencyStats:
    """P50/P95/P99, mean, max and the share of replies over ``budget_s``.

    >>> latency_stats([0.1, 0.2, 0.3, 20.0], budget_s=15).over_budget
    0.25
    """
    xs = [float(x) for x in latencies]
    n = len(xs)
    return LatencyStats(
        n=n,
        p50=percentile(xs, 50),
        p95=percentile(xs, 95),
        p99=percentile(xs, 99),
        mean=sum(xs) / n if n else float("nan"),
        max=max(xs) if xs else float("nan"),
        budget_s=budget_s,
        over_budget=(sum(x > budget_s for x in xs) / n if n else 0.0) if budget_s is not None else None,
    )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds from ``"15s"``, ``"500ms"``, ``"2m"`` or a bare number of seconds.

    >>> parse_duration("500ms"), parse_duration("15s"), parse_duration("2m"), parse_duration("3")
    (0.5, 15.0, 120.0, 3.0)
    """
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 15s, 500ms, 2m)")
    value, unit = float(m.group(1)), (m.group(2) or "s")
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0}[unit]


@dataclass
class Interval:
    """A point estimate with a bootstrap confidence interval."""

    value: float
    low: float
    high: float
    level: float = 0.95

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level}


def bootstrap(
    data: Sequence,
    statistic: Callable[[Sequence], float],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over ``data`` (resampled with replacement).

    >>> iv = bootstrap([1, 1, 1, 0], lambda xs: sum(xs) / len(xs), seed=1)
    >>> iv.value, 0 <= iv.low <= iv.value <= iv.high <= 1
    (0.75, True)
    """
    data = list(data)
    value = statistic(data) if data else float("nan")
    if len(data) < 2:
        return Interval(value, value, value, level)
    rng = random.Random(seed)
    n = len(data)
    stats = []
    for _ in range(n_resamples):
        s = statistic(rng.choices(data, k=n))
        if not math.isnan(s):
            stats.append(s)
    if not stats:
        return Interval(value, float("nan"), float("nan"), level)
    alpha = (1 - level) / 2
    return Interval(value, percentile(stats, 100 * alpha), percentile(stats, 100 * (1 - alpha)), level)


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa between two raters' labels (any hashable labels). 1.0 when both raters
    agree perfectly even on one class; ``nan`` for no items.

    >>> cohen_kappa([1, 0, 1], [1, 0, 1])
    1.0
    """
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return float("nan")
    labels = set(a) | set(b)
    po = sum(x == y for x, y in zip(a, b)) / n
    pe = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in labels)
    if pe >= 1.0:
        return 1.0 if po >= 1.0 else 0.0
    return (po - pe) / (1 - pe)


def binary_rates(truth: Sequence[bool], predicted: Sequence[bool]) -> dict[str, float]:
    """Agreement, TPR (pass labels the judge passes) and TNR (fail labels the judge fails).

    >>> binary_rates([True, True, False, False], [True, False, False, False])["tnr"]
    1.0
    """
    pos = [p for t, p in zip(truth, predicted) if t]
    neg = [p for t, p in zip(truth, predicted) if not t]
    n = len(truth)
    return {
        "agreement": sum(t == p for t, p in zip(truth, predicted)) / n if n else float("nan"),
        "tpr": sum(pos) / len(pos) if pos else float("nan"),
        "tnr": sum(not p for p in neg) / len(neg) if neg else float("nan"),
    }


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """pass^k for one case: the chance that ``k`` trials drawn without replacement from the
    ``trials`` run all succeed, C(c, k) / C(n, k) (the tau-bench estimator).

    >>> pass_hat_k(3, 4, 2)
    0.5
    """
    if k > trials:
        raise ValueError(f"pass^{k} needs at least {k} trials, got {trials}")
    return math.comb(successes, k) / math.comb(trials, k)
