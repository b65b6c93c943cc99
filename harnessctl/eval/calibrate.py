"""How far to trust the judge: its verdicts against human labels, with bootstrap intervals.

Reported: agreement, Cohen's kappa, TPR (labelled-pass episodes the judge passes), TNR
(labelled-fail episodes the judge fails), per-criterion agreement where labels give criteria,
and — from pairs of episodes of the same case that humans labelled differently — pairwise
accuracy and position-swap consistency (the judge picks the same episode whichever side it is
shown on).

>>> from harnessctl.models.scripted import ScriptedModel
>>> labels = [Label(id=str(i), label="pass" if i % 2 else "fail", episode={"reply": "x"}) for i in range(4)]
>>> rep = calibrate(labels, Judge(ScriptedModel(['{"verdict": "pass"}'], repeat_last=True)), pairwise=False)
>>> rep.tpr.value, rep.tnr.value
(1.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.models.registry import resolve_model

from .judge import Judge, PairwiseVerdict, Verdict
from .labels import Label, LabelError, read_labels
from .stats import Interval, binary_rates, bootstrap, cohen_kappa


@dataclass
class CalibrationReport:
    n: int
    n_pass_labels: int
    n_fail_labels: int
    agreement: Interval
    kappa: Interval
    tpr: Interval
    tnr: Interval
    confusion: dict[str, int]  # label/judge: pass/pass, pass/fail, fail/pass, fail/fail
    criteria_agreement: dict[str, Interval] = field(default_factory=dict)
    n_pairs: int = 0
    swap_consistency: Interval | None = None
    pairwise_accuracy: Interval | None = None
    judge_errors: int = 0  # verdicts the judge's text did not hold (counted as fail)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    judge: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items()}
        for k, v in list(d.items()):
            if isinstance(v, Interval):
                d[k] = v.to_dict()
        d["criteria_agreement"] = {k: v.to_dict() for k, v in self.criteria_agreement.items()}
        return d


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def pairs_from_labels(labels: Sequence[Label], max_pairs: int = 200) -> list[tuple[Label, Label]]:
    """(better, worse) pairs: a labelled-pass and a labelled-fail episode of the same group
    (case). At most one pair per group, in file order, capped at ``max_pairs``."""
    by_group: dict[str, list[Label]] = {}
    for lab in labels:
        by_group.setdefault(lab.group or lab.case_id or lab.id, []).append(lab)
    pairs = []
    for group in by_group.values():
        good = [lab for lab in group if lab.passed]
        bad = [lab for lab in group if not lab.passed]
        if good and bad:
            pairs.append((good[0], bad[0]))
        if len(pairs) >= max_pairs:
            break
    return pairs


def calibrate(
    labels: Sequence[Label],
    judge: Judge,
    *,
    pairwise: bool = True,
    jobs: int = 4,
    n_resamples: int = 1000,
    seed: int = 0,
    max_pairs: int = 200,
    progress: Callable[[int, int], None] | None = None,
) -> CalibrationReport:
    """Judge every labelled episode (``jobs`` at a time) and compare with the labels."""
    labels = list(labels)
    if not labels:
        raise ValueError("no labels to calibrate against")
    pairs = pairs_from_labels(labels, max_pairs) if pairwise else []
    total = len(labels) + len(pairs)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    def judge_one(lab: Label) -> Verdict:
        v = judge.judge(lab.episode)
        tick()
        return v

    def compare_one(pair: tuple[Label, Label]) -> PairwiseVerdict:
        v = judge.compare(pair[0].episode, pair[1].episode)
        tick()
        return v

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        verdicts = list(pool.map(judge_one, labels))
        pair_verdicts = list(pool.map(compare_one, pairs))

    truth = [lab.passed for lab in labels]
    pred = [v.passed for v in verdicts]
    rows = list(zip(truth, pred))

    def stat(name: str) -> Callable[[Sequence[tuple[bool, bool]]], float]:
        return lambda rs: binary_rates([t for t, _ in rs], [p for _, p in rs])[name]

    kappa = bootstrap(
        rows,
        lambda rs: cohen_kappa([int(t) for t, _ in rs], [int(p) for _, p in rs]),
        n_resamples=n_resamples,
        seed=seed,
    )
    confusion = {
        "pass/pass": sum(t and p for t, p in rows),
        "pass/fail": sum(t and not p for t, p in rows),
        "fail/pass": sum((not t) and p for t, p in rows),
        "fail/fail": sum((not t) and (not p) for t, p in rows),
    }
    criteria_agreement: dict[str, Interval] = {}
    keys = sorted({k for lab in labels for k in lab.criteria})
    for k in keys:
        agree = [
            float(lab.criteria[k] == v.criteria[k])
            for lab, v in zip(labels, verdicts)
            if k in lab.criteria and k in v.criteria
        ]
        if agree:
            criteria_agreement[k] = bootstrap(agree, _mean, n_resamples=n_resamples, seed=seed)
    report = CalibrationReport(
        n=len(labels),
        n_pass_labels=sum(truth),
        n_fail_labels=len(truth) - sum(truth),
        agreement=bootstrap(rows, stat("agreement"), n_resamples=n_resamples, seed=seed),
        kappa=kappa,
        # TPR/TNR are resampled within their own class so each interval reflects its own n.
        tpr=bootstrap(
            [p for t, p in rows if t], lambda xs: _mean([float(x) for x in xs]), n_resamples=n_resamples, seed=seed
        ),
        tnr=bootstrap(
            [p for t, p in rows if not t],
            lambda xs: _mean([float(not x) for x in xs]),
            n_resamples=n_resamples,
            seed=seed,
        ),
        confusion=confusion,
        criteria_agreement=criteria_agreement,
        judge_errors=sum(v.parse_error is not None for v in verdicts),
        disagreements=[
            {
                "id": lab.id,
                "label": lab.label,
                "judge": "pass" if v.passed else "fail",
                "label_reason": lab.reason,
                "judge_reason": v.reason,
            }
            for lab, v in zip(labels, verdicts)
            if lab.passed != v.passed
        ],
        judge=judge.name,
    )
    if pairs:
        report.n_pairs = len(pairs)
        report.swap_consistency = bootstrap(
            [float(v.consistent) for v in pair_verdicts], _mean, n_resamples=n_resamples, seed=seed
        )
        # The labelled-pass episode is "first" in every pair: the judge is right when it picks it
        # consistently in both orders.
        report.pairwise_accuracy = bootstrap(
            [float(v.winner == "first") for v in pair_verdicts], _mean, n_resamples=n_resamples, seed=seed
        )
    return report


def calibrate_labels(
    labels_path: str | Path,
    judge_model: str,
    *,
    api_base: str | None = None,
    limit: int | None = None,
    pairwise: bool = True,
    jobs: int = 4,
    progress: Callable[[int, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> CalibrationReport:
    """:func:`calibrate` the judge ``judge_model`` (a model string, resolved with ``api_base``)
    against the labels in ``labels_path`` (the first ``limit`` of them). ``warn`` is told, before
    any judge call, when labels were made by a program rather than a person. Raises
    :class:`~harnessctl.eval.labels.LabelError` for a file without labels.

    >>> rep = calibrate_labels("evals/labels.jsonl", "openai/gpt-4o-mini", limit=20, warn=print)   # doctest: +SKIP
    >>> rep.kappa.value                                                                          # doctest: +SKIP
    0.71
    """
    rows = read_labels(labels_path)
    if not rows:
        raise LabelError(
            f"{labels_path}: no labels in the file; label episodes with `harnessctl judge label RUN --out {labels_path}`"
        )
    programmatic = sum("programmatic" in (getattr(r, "labeler", "") or "").lower() for r in rows)
    if programmatic and warn:
        warn(
            f"{programmatic} of {len(rows)} labels in {labels_path} were made by a program, not a person "
            "(their labeler field says so): this measures agreement with that program, not with human judgement. "
            "Label episodes with `harnessctl judge label RUN` for a human calibration."
        )
    if limit is not None:
        rows = rows[:limit]
    return calibrate(
        rows, Judge(resolve_model(judge_model, api_base=api_base)), pairwise=pairwise, jobs=jobs, progress=progress
    )
