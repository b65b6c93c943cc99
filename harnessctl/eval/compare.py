"""Compare two runs: per-suite score deltas with bootstrap intervals, cases that flipped, and a
regression verdict a CI gate can act on.

A regression is a drop of more than ``threshold`` points. Under the default ``gate="point"`` the
drop's point estimate decides; at a few dozen cases a handful of flipped cases moves it by several
points, so each suite also says whether its whole interval lies below 0 (``beyond_noise``), and
``gate="interval"`` fails only when the whole interval lies beyond the threshold (a drop the
cases leave no doubt about; it misses smaller ones on small runs).

Cases are paired by (suite, case id, repeat); the scores, the delta and its interval are
computed on the paired (shared) cases only, so two runs over different ``--limit`` values still
compare like with like. A case that ended in an error (a timeout, a model error) in either run
has no score: it is left out of the pairs and listed under ``errors_a``/``errors_b``, never
counted as a low score (``eval --resume`` runs it again). A suite that only one run holds (e.g. ``ifeval``, which the oracle skips)
is reported as such (``present_in`` "A" or "B", with why it was skipped when the run says) and is
never a regression. Runs made on different suites versions are not compared unless forced
(:func:`check_suite_versions`): the same case id names a different case.

>>> from harnessctl.eval.results import CaseResult
>>> a = [CaseResult("livestream", f"c{i}", score=1.0, passed=True) for i in range(10)]
>>> b = [CaseResult("livestream", f"c{i}", score=1.0 if i else 0.0, passed=bool(i)) for i in range(10)]
>>> cmp = compare_results(a, b, threshold=5.0)
>>> cmp.suites["livestream"].delta.value, cmp.suites["livestream"].pass_to_fail, cmp.regression
(-10.0, ['c0'], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessctl.errors import HarnessctlError

from .results import CaseResult
from .stats import Interval, bootstrap


@dataclass
class SuiteDelta:
    suite: str
    n_paired: int
    score_a: float  # 0-100 on the paired cases
    score_b: float
    delta: Interval  # b - a, points
    pass_to_fail: list[str] = field(default_factory=list)
    fail_to_pass: list[str] = field(default_factory=list)
    only_a: int = 0
    only_b: int = 0
    #: Cases of this suite that ended in an error (no score) in run A / run B, left out of the pairs.
    errors_a: list[str] = field(default_factory=list)
    errors_b: list[str] = field(default_factory=list)
    #: Cases of this suite each run holds, scored or not.
    cases_a: int = 0
    cases_b: int = 0
    regression: bool = False
    skipped_a: str | None = None  # why run A did not run this suite, when it says
    skipped_b: str | None = None

    @property
    def beyond_noise(self) -> bool:
        """Whether the delta's whole interval lies on one side of 0 (a difference the paired
        cases show, not one a different sample of cases could reverse). Never for one paired
        case: its bootstrap "interval" is the point itself, and says nothing about noise."""
        return self.has_interval and (self.delta.high < 0 or self.delta.low > 0)

    @property
    def has_interval(self) -> bool:
        """Whether there are enough paired cases (two) for the interval to mean anything."""
        return self.n_paired >= MIN_PAIRED_FOR_INTERVAL

    @property
    def present_in(self) -> str:
        """``"both"`` when each run holds cases of this suite (scored or errored), else ``"A"`` or ``"B"``."""
        has_a, has_b = bool(self.n_paired or self.cases_a), bool(self.n_paired or self.cases_b)
        return "both" if has_a and has_b else "A" if has_a else "B"

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["delta"] = self.delta.to_dict()
        d["present_in"] = self.present_in
        d["beyond_noise"] = self.beyond_noise
        return d


@dataclass
class Comparison:
    run_a: str
    run_b: str
    threshold: float
    suites: dict[str, SuiteDelta]
    gate: str = "point"

    @property
    def regression(self) -> bool:
        return any(s.regression for s in self.suites.values())

    @property
    def errors(self) -> dict[str, int]:
        """Cases left out because they ended in an error: ``{"a": n, "b": n}``."""
        return {
            "a": sum(len(s.errors_a) for s in self.suites.values()),
            "b": sum(len(s.errors_b) for s in self.suites.values()),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "threshold": self.threshold,
            "gate": self.gate,
            "regression": self.regression,
            "errors": self.errors,
            "suites": {k: v.to_dict() for k, v in self.suites.items()},
        }


#: How a drop becomes a regression: its point estimate, or its whole 95 % interval, beyond the threshold.
GATES = ("point", "interval")
#: Paired cases a suite needs before its interval says anything (one case resamples to itself).
MIN_PAIRED_FOR_INTERVAL = 2
#: Paired cases that must get worse (the others unchanged) before the 95 % bootstrap interval can
#: lie wholly below 0: a resample leaves out all k of n with probability (1 - k/n)^n ≈ e^-k, under
#: the 2.5 % tail from k = 4. The interval rule cannot refuse a suite on fewer worse cases.
MIN_WORSE_FOR_INTERVAL = 4


class SuiteVersionError(HarnessctlError, ValueError):
    """Two runs were made on different versions of a suite (their cases are not the same)."""


def suites_version(manifest: dict[str, Any], suite: str) -> str | None:
    """The suites version a run's manifest records for ``suite`` (``"2"``); older manifests
    carry it as the major part of the suite's ``version`` (``"1.51001"`` -> ``"1"``).

    >>> suites_version({"suites": {"livestream": {"version": "1.51001"}}}, "livestream")
    '1'
    """
    info = (manifest.get("suites") or {}).get(suite) or {}
    if info.get("suites_version") is not None:
        return str(info["suites_version"])
    version = info.get("version")
    return str(version).split(".", 1)[0] if version else None


def check_suite_versions(manifest_a: dict[str, Any], manifest_b: dict[str, Any]) -> None:
    """Raise :class:`SuiteVersionError` when a suite both runs hold was built at different
    suites versions (``compare --force`` skips this check).

    >>> check_suite_versions({"suites": {"variant": {"suites_version": "1"}}}, {"suites": {"variant": {"suites_version": "2"}}})
    Traceback (most recent call last):
    ...
    harnessctl.eval.compare.SuiteVersionError: suite variant: run A used suites version 1, run B version 2; re-run A on the current suites (or pass --force to compare anyway)
    """
    shared = set(manifest_a.get("suites") or {}) & set(manifest_b.get("suites") or {})
    problems = []
    for s in sorted(shared):
        ma, mb = (((m.get("suites") or {}).get(s) or {}).get("messages", "eval") for m in (manifest_a, manifest_b))
        if ma != mb:
            problems.append(
                f"suite {s}: run A worded its viewer messages from the {ma} templates, run B from the {mb} ones "
                "(a control built with `build-suites --messages train`); the cases differ"
            )
            continue
        va, vb = suites_version(manifest_a, s), suites_version(manifest_b, s)
        if va is not None and vb is not None and va != vb:
            older = "A" if va < vb else "B"
            problems.append(
                f"suite {s}: run A used suites version {va}, run B version {vb}; re-run {older} on the current suites"
            )
    if problems:
        raise SuiteVersionError("; ".join(problems) + " (or pass --force to compare anyway)")


def _label(r: CaseResult) -> str:
    return r.case_id if r.repeat == 0 else f"{r.case_id}#{r.repeat}"


def compare_results(
    a: Sequence[CaseResult],
    b: Sequence[CaseResult],
    *,
    threshold: float = 1.0,
    gate: str = "point",
    run_a: str = "A",
    run_b: str = "B",
    n_resamples: int = 1000,
    seed: int = 0,
    skipped_a: dict[str, str] | None = None,
    skipped_b: dict[str, str] | None = None,
) -> Comparison:
    """Run B against run A. A suite regresses when B's score is more than ``threshold`` points
    below A's on the paired cases: the point estimate under ``gate="point"``, the whole bootstrap
    interval under ``gate="interval"``. ``skipped_a``/``skipped_b`` (suite -> why, from a run's
    summary) explain a missing suite. A case that ended in an error in either run is not paired:
    it has no score to compare (``errors_a``/``errors_b`` name it).

    >>> from harnessctl.eval.results import CaseResult
    >>> a = [CaseResult("livestream", f"c{i}", score=1.0, passed=True) for i in range(20)]
    >>> b = [CaseResult("livestream", f"c{i}", score=0.0 if i < 2 else 1.0, passed=i >= 2) for i in range(20)]
    >>> point, interval = (compare_results(a, b, gate=g).suites["livestream"] for g in GATES)
    >>> point.delta.value, point.regression, point.beyond_noise, interval.regression
    (-10.0, True, False, False)
    """
    if gate not in GATES:
        raise ValueError(f"gate must be one of {', '.join(GATES)}, got {gate!r}")
    skipped_a, skipped_b = skipped_a or {}, skipped_b or {}
    index_a = {r.key: r for r in a}
    index_b = {r.key: r for r in b}
    suites = sorted({k[0] for k in index_a} | {k[0] for k in index_b})
    out: dict[str, SuiteDelta] = {}
    for s in suites:
        keys_a = {k for k in index_a if k[0] == s}
        keys_b = {k for k in index_b if k[0] == s}
        errored_a = sorted(k for k in keys_a if index_a[k].error is not None)
        errored_b = sorted(k for k in keys_b if index_b[k].error is not None)
        paired = sorted((keys_a & keys_b) - set(errored_a) - set(errored_b))
        diffs = [100.0 * (index_b[k].score - index_a[k].score) for k in paired]
        delta = (
            bootstrap(diffs, lambda xs: sum(xs) / len(xs), n_resamples=n_resamples, seed=seed)
            if diffs
            else Interval(0.0, 0.0, 0.0)
        )
        score_a = 100.0 * sum(index_a[k].score for k in paired) / len(paired) if paired else 0.0
        score_b = 100.0 * sum(index_b[k].score for k in paired) / len(paired) if paired else 0.0
        out[s] = SuiteDelta(
            suite=s,
            n_paired=len(paired),
            score_a=round(score_a, 2),
            score_b=round(score_b, 2),
            delta=Interval(round(delta.value, 3), round(delta.low, 3), round(delta.high, 3), delta.level),
            pass_to_fail=[_label(index_b[k]) for k in paired if index_a[k].passed and not index_b[k].passed],
            fail_to_pass=[_label(index_b[k]) for k in paired if not index_a[k].passed and index_b[k].passed],
            only_a=len(keys_a - keys_b - set(errored_a)),
            only_b=len(keys_b - keys_a - set(errored_b)),
            errors_a=[_label(index_a[k]) for k in errored_a],
            errors_b=[_label(index_b[k]) for k in errored_b],
            cases_a=len(keys_a),
            cases_b=len(keys_b),
            # The interval gate asks for a drop beyond doubt, which one paired case cannot show.
            regression=bool(paired)
            and (
                delta.high < -threshold and len(paired) >= MIN_PAIRED_FOR_INTERVAL
                if gate == "interval"
                else delta.value < -threshold
            ),
            skipped_a=skipped_a.get(s) if not keys_a else None,
            skipped_b=skipped_b.get(s) if not keys_b else None,
        )
    return Comparison(run_a=run_a, run_b=run_b, threshold=threshold, suites=out, gate=gate)
