"""How long a study's training will take on this machine, before it starts: a probe study with
every phase of every arm cut to a few steps (and a tenth of the dataset) trains for real in a scratch
folder, and each phase's measured seconds per step is multiplied by the steps the plan asks for.

Why measure rather than quote: the same full preset took 76 minutes on one pair of cores (bf16)
and about two and a half hours on another (AVX2 only, fp32); the 90 minutes a study is held to
depend on the processor.

The projection counts training and the datasets. It leaves out evaluation, and an anchor phase
counted at its ``max_steps`` (it may stop sooner). A step is timed after the probe's first,
which carries the warm-up (the trainer logs the elapsed time of every row); an untrained policy's
RL episodes run long, so that figure leans high.

>>> from harnessctl.experiment import full_plan
>>> estimate = estimate_study(full_plan())                  # doctest: +SKIP
>>> format_minutes(estimate.total_s), estimate.fits_budget  # doctest: +SKIP
('2 h 40 min', False)
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .plan import StudyPlan, apply_overrides

#: Steps each phase of the probe trains: enough to time a step, few enough to take minutes.
PROBE_STEPS = 3
#: Share of the plan's trajectory cases the probe's datasets hold (48 at least): enough rows for
#: SFT's length-grouped batches to pad as little as the study's, and for the datasets' fixed costs
#: to count little when their time is scaled up.
PROBE_SHARE = 0.1
PROBE_CASES = 48
#: The budget a full study is held to.
BUDGET_S = 90 * 60


@dataclass
class PhaseEstimate:
    """One training phase of one arm: the steps planned and the time a step took in the probe."""

    arm: str
    phase: str
    planned_steps: int
    probe_steps: int
    seconds_per_step: float

    @property
    def projected_s(self) -> float:
        return self.planned_steps * self.seconds_per_step


@dataclass
class StudyEstimate:
    """The projected training time of a plan on this machine, phase by phase.

    >>> e = StudyEstimate([PhaseEstimate("base", "general", 300, 3, 1.3)], data_s=40.0, probe_s=200.0)
    >>> round(e.total_s), e.fits_budget
    (430, True)
    """

    phases: list[PhaseEstimate]
    data_s: float
    probe_s: float
    hardware: dict[str, Any] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        return self.data_s + sum(p.projected_s for p in self.phases)

    @property
    def fits_budget(self) -> bool:
        return self.total_s <= BUDGET_S

    def to_dict(self) -> dict[str, Any]:
        return {
            "phases": [{**asdict(p), "projected_s": round(p.projected_s, 1)} for p in self.phases],
            "data_s": round(self.data_s, 1),
            "total_s": round(self.total_s, 1),
            "budget_s": BUDGET_S,
            "fits_budget": self.fits_budget,
            "probe_s": round(self.probe_s, 1),
            "hardware": self.hardware,
            "leaves_out": "evaluation; an anchor phase is counted at its max_steps",
        }


def probe_plan(plan: StudyPlan) -> StudyPlan:
    """``plan`` with every phase cut to :data:`PROBE_STEPS` steps and a tenth of its cases;
    held-out scoring off (scored at the first and the last step of so short a run, it would
    count several times over), and an anchor phase that does not stop early.

    >>> from harnessctl.experiment import full_plan
    >>> p = probe_plan(full_plan())
    >>> p.data_n, p.stage_overrides["copy"]["max_steps"], p.stage_overrides["anchor"]["stop_near_teacher"]
    (600, '3', '0')
    """
    cases = min(plan.data_n, max(PROBE_CASES, round(plan.data_n * PROBE_SHARE)))
    variants = min(plan.data_variants, max(PROBE_CASES, round(plan.data_variants * PROBE_SHARE)))
    sets = [f"data_n={cases}", f"data_variants={variants}"]
    for stage in ("base", "sft", "distill", "rl"):
        sets.append(f"{stage}.max_steps={PROBE_STEPS}")
    sets += [f"base.rows={PROBE_CASES * 2}", "distill.heldout=", "sft.heldout_rows=0"]
    if plan.copy_phase():
        sets.append(f"copy.max_steps={PROBE_STEPS}")
    if plan.anchor_phase():
        sets += [f"anchor.max_steps={PROBE_STEPS}", "anchor.stop_near_teacher=0", "anchor.heldout="]
    return apply_overrides(plan, sets)


def planned_configs(plan: StudyPlan, root: Path) -> dict[tuple[str, str], Any]:
    """``{(arm, phase): trainer config}`` as ``plan`` would train them (phase ``general`` for a
    one-phase arm, then ``copy`` or ``anchor`` for its second phase)."""
    from .runner import anchor_phase_config, copy_phase_config, stage_config

    configs: dict[tuple[str, str], Any] = {}
    for arm in plan.arms():
        configs[(arm.name, "general")] = stage_config(plan, arm, root)
        if arm.stage == "base" and plan.copy_phase():
            configs[(arm.name, "copy")] = copy_phase_config(plan, root)
        if arm.stage == "distill" and plan.anchor_phase():
            configs[(arm.name, "anchor")] = anchor_phase_config(plan, arm, root)
    return configs


@dataclass
class ProbePhase:
    """What the probe measured of one phase: its steps, its seconds, and its logged rows."""

    steps: int
    seconds: float
    log: list[dict[str, float]]

    def seconds_per_step(self) -> float:
        """Seconds a step took after the first (which carries the warm-up) where the log has the
        elapsed time of two steps or more; else the phase's mean.

        >>> ProbePhase(3, 9.0, [{"step": 1, "elapsed_s": 5.0}, {"step": 3, "elapsed_s": 9.0}]).seconds_per_step()
        2.0
        >>> ProbePhase(3, 9.0, []).seconds_per_step()
        3.0
        """
        span = self._span("elapsed_s")
        return span[1] / span[0] if span else self.seconds / max(self.steps, 1)

    def seconds_per_token(self) -> float | None:
        """Seconds per trained token over the same steps (``num_tokens`` is cumulative in the log)."""
        span, tokens = self._span("elapsed_s"), self._span("num_tokens")
        if span and tokens and tokens[1] > 0:
            return span[1] / tokens[1]
        return None

    def _span(self, key: str) -> tuple[float, float] | None:
        rows = [(r["step"], r[key]) for r in self.log if key in r and "step" in r]
        if len(rows) < 2 or rows[-1][0] <= rows[0][0]:
            return None
        return rows[-1][0] - rows[0][0], rows[-1][1] - rows[0][1]


def probe_phases(record: dict[str, Any]) -> dict[str, ProbePhase]:
    """``{phase: ProbePhase}`` from an arm's ``train.json`` (a two-phase arm's joined log is split
    at the first phase's last step; the second phase's steps are numbered after it)."""
    from .runner import _train_seconds

    log = list(record.get("log") or [])
    if not record.get("phases"):
        return {"general": ProbePhase(int(record.get("steps", 0)), _train_seconds(record), log)}
    first, second = record["phases"][0], record["phases"][1]
    cut = int(first["steps"])
    return {
        first["phase"]: ProbePhase(cut, float(first["seconds"]), [r for r in log if r.get("step", 0) <= cut]),
        second["phase"]: ProbePhase(
            int(second["steps"]), float(second["seconds"]), [r for r in log if r.get("step", 0) > cut]
        ),
    }


def sft_seconds_per_step(phase: ProbePhase, record: dict[str, Any], cfg: Any) -> float | None:
    """An SFT step's seconds for a batch of average rows: the probe's seconds per trained token
    times the tokens of ``cfg``'s batch at the dataset's mean row length. Per step alone would
    lean high: length-grouped batches put the longest rows first, and the probe trains only those.

    >>> log = [{"step": 1, "elapsed_s": 6.0, "num_tokens": 8000}, {"step": 3, "elapsed_s": 14.0, "num_tokens": 24000}]
    >>> sft_seconds_per_step(ProbePhase(3, 14.0, log), {"extra": {"rows": 10, "row_tokens": 10000}},
    ...                      type("Cfg", (), {"per_device_batch_size": 8, "gradient_accumulation_steps": 1}))
    4.0
    """
    extra = record.get("extra") or {}
    rows, row_tokens = extra.get("rows"), extra.get("row_tokens")
    per_token = phase.seconds_per_token()
    if per_token is None and record.get("tokens"):
        per_token = phase.seconds / float(record["tokens"])
    if not (per_token and rows and row_tokens):
        return None
    rows_per_step = int(cfg.per_device_batch_size) * int(cfg.gradient_accumulation_steps)
    return round(per_token * rows_per_step * row_tokens / rows, 4)


def estimate_study(
    plan: StudyPlan, work: str | Path | None = None, *, say: Callable[[str], None] = print, progress: bool = False
) -> StudyEstimate:
    """Train ``plan``'s probe (:func:`probe_plan`) in ``work`` (a scratch folder when None,
    removed after) and project each phase's measured time per step onto the plan's steps."""
    from .runner import TRAIN_FILE, _read_json, build_datasets, train_arms

    probe = probe_plan(plan)
    scratch = work is None
    root = Path(tempfile.mkdtemp(prefix="harnessctl-estimate-")) if scratch else Path(work)
    started = time.perf_counter()
    try:
        root.mkdir(parents=True, exist_ok=True)
        planned = planned_configs(plan, root)
        data = build_datasets(probe, root, say)
        data_s = sum(float(d.get("seconds", 0.0)) for d in data.values()) * plan.data_n / probe.data_n
        train_arms(probe, probe.arms(), root, say, progress)
        records = {arm.name: _read_json(root / "arms" / arm.name / TRAIN_FILE) or {} for arm in plan.arms()}
        phases = []
        for (name, phase), cfg in planned.items():
            measured = probe_phases(records[name]).get(phase)
            if measured is None:
                continue
            per_step = measured.seconds_per_step()
            if cfg.stage == "sft":
                per_step = sft_seconds_per_step(measured, records[name], cfg) or per_step
            phases.append(PhaseEstimate(name, phase, int(cfg.max_steps), measured.steps, per_step))
        hardware = next((r["hardware"] for r in records.values() if r.get("hardware")), {})
        return StudyEstimate(phases, data_s, time.perf_counter() - started, hardware)
    finally:
        if scratch:
            shutil.rmtree(root, ignore_errors=True)


def format_minutes(seconds: float) -> str:
    """``95 min`` or ``2 h 35 min``.

    >>> format_minutes(5700), format_minutes(9300), format_minutes(20)
    ('95 min', '2 h 35 min', '0 min')
    """
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"
