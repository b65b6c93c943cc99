"""How long a study will take on this machine, before it starts: a probe study with every phase
of every arm cut to a few steps (and a tenth of the dataset) trains for real in a scratch folder,
and each phase's measured seconds per step is multiplied by the steps the plan asks for; then a
trained model of the study's size (the shipped HAT) is evaluated on a few cases of every
evaluation run the plan makes, and its seconds per case are multiplied by the plan's cases.

Why measure rather than quote: the same full preset took 76 minutes on one pair of cores (bf16)
and about two and a half hours on another (AVX2 only, fp32); the 90 minutes a study is held to
depend on the processor.

A step is timed after the probe's first, which carries the warm-up (the trainer logs the elapsed
time of every row). Checks an extension makes while a phase trains (the experimental wing's
held-out rows) are timed once by it and counted at every check the plan's phases make; a phase
that may stop early is counted at its ``max_steps``. Evaluation is timed on the shipped HAT
rather than on the probe's arms, which a few steps from scratch leave answering unlike trained
ones. RL is timed on the probe's own policy, whose episodes may run longer or shorter than a
trained one's (docs/studies/compute.md).

>>> from harnessctl.experiment import full_plan
>>> estimate = estimate_study(full_plan())                  # doctest: +SKIP
>>> format_minutes(estimate.total_s), estimate.fits_budget  # doctest: +SKIP
('3 h 0 min', False)
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.eval.runner import EvalConfig, run_eval
from harnessctl.eval.suites import load_suite
from harnessctl.models import registry
from harnessctl.models.shipped import missing_for_inference

from .arms import TRAIN_FILE, StudyInterrupted, _read_json, _train_seconds, phase_config, stage_config
from .plan import ARMS, SUITES, StudyPlan, apply_overrides, arm_extras
from .runner import AGENT_SUITES, FINAL_ARM, build_datasets, check_inputs, evaluate_arm, history_evals, train_arms

#: Steps each phase of the probe trains: enough to time a step, few enough to take minutes.
PROBE_STEPS = 3
#: Share of the plan's trajectory cases the probe's datasets hold (48 at least): enough rows for
#: SFT's length-grouped batches to pad as little as the study's, and for the datasets' fixed costs
#: to count little when their time is scaled up.
PROBE_SHARE = 0.1
PROBE_CASES = 48
#: Cases of each agent-suite evaluation run the probe times (at most the plan's own), and IFEval
#: prompts: a tenth of a second each, so more of them for the same steadiness.
PROBE_EVAL_CASES = 16
PROBE_IFEVAL_PROMPTS = 64
#: The shipped model whose evaluation stands in for every arm's: trained, of the study's size.
EVAL_PROXY = "hat"
#: The budget a full study is held to.
BUDGET_S = 90 * 60


@dataclass
class PhaseEstimate:
    """One training phase of one arm: the steps planned, the time a step took in the probe, and
    the seconds of held-out scoring the phase makes at its planned checks (OPD's ``heldout`` rows)."""

    arm: str
    phase: str
    planned_steps: int
    probe_steps: int
    seconds_per_step: float
    heldout_s: float = 0.0

    @property
    def projected_s(self) -> float:
        return self.planned_steps * self.seconds_per_step + self.heldout_s


@dataclass
class EvalEstimate:
    """One kind of evaluation run (``suites``: the agent suites; ``history``; ``ifeval``;
    ``served``: the final arm's livestream through the embedded server): the cases each run holds,
    the arms that make it, and the seconds a case took the timed model."""

    kind: str
    planned_cases: int
    arms: int
    probe_cases: int
    seconds_per_case: float

    @property
    def projected_s(self) -> float:
        return self.planned_cases * self.arms * self.seconds_per_case


@dataclass
class StudyEstimate:
    """The projected time of a plan on this machine: datasets, each training phase, evaluation.

    >>> e = StudyEstimate([PhaseEstimate("base", "general", 300, 3, 1.3)], data_s=40.0, probe_s=200.0,
    ...                   evaluation=[EvalEstimate("ifeval", 1000, 5, 64, 0.1)])
    >>> round(e.train_s), round(e.eval_s), round(e.total_s), e.fits_budget
    (430, 500, 930, True)
    """

    phases: list[PhaseEstimate]
    data_s: float
    probe_s: float
    hardware: dict[str, Any] = field(default_factory=dict)
    evaluation: list[EvalEstimate] = field(default_factory=list)
    #: The model whose evaluation was timed (``shipped:hat``, or the probe's own arm and why).
    eval_timed_on: str = ""

    @property
    def train_s(self) -> float:
        """The datasets and every training phase (held-out scoring included)."""
        return self.data_s + sum(p.projected_s for p in self.phases)

    @property
    def eval_s(self) -> float:
        return sum(e.projected_s for e in self.evaluation)

    @property
    def total_s(self) -> float:
        return self.train_s + self.eval_s

    @property
    def fits_budget(self) -> bool:
        return self.total_s <= BUDGET_S

    def to_dict(self) -> dict[str, Any]:
        return {
            "phases": [{**asdict(p), "projected_s": round(p.projected_s, 1)} for p in self.phases],
            "data_s": round(self.data_s, 1),
            "train_s": round(self.train_s, 1),
            "evaluation": [{**asdict(e), "projected_s": round(e.projected_s, 1)} for e in self.evaluation],
            "eval_s": round(self.eval_s, 1),
            "eval_timed_on": self.eval_timed_on,
            "total_s": round(self.total_s, 1),
            "budget_s": BUDGET_S,
            "fits_budget": self.fits_budget,
            "probe_s": round(self.probe_s, 1),
            "hardware": self.hardware,
            "leaves_out": "an anchor phase is counted at its max_steps",
        }


def probe_plan(plan: StudyPlan) -> StudyPlan:
    """``plan`` with every phase cut to :data:`PROBE_STEPS` steps and a tenth of its cases, and
    what the installed extensions set for a probe (the experimental wing: held-out scoring off,
    which scored at the first and the last step of so short a run would count several times over,
    and an anchor phase that does not stop early).

    >>> from harnessctl.experiment import quick_plan
    >>> p = probe_plan(quick_plan())
    >>> p.data_n, p.stage_overrides["sft"]["max_steps"]
    (48, '3')
    """
    cases = min(plan.data_n, max(PROBE_CASES, round(plan.data_n * PROBE_SHARE)))
    variants = min(plan.data_variants, max(PROBE_CASES, round(plan.data_variants * PROBE_SHARE)))
    sets = [f"data_n={cases}", f"data_variants={variants}"]
    for stage in ("base", "sft", "distill", "rl"):
        sets.append(f"{stage}.max_steps={PROBE_STEPS}")
    sets += [f"base.rows={PROBE_CASES * 2}", "sft.heldout_rows=0"]
    for extra in arm_extras():
        sets += extra.probe_sets
    for phase in plan.phases():
        sets += [f"{phase.name}.max_steps={PROBE_STEPS}", *phase.probe_sets]
    return apply_overrides(plan, sets)


def planned_configs(plan: StudyPlan, root: Path) -> dict[tuple[str, str], Any]:
    """``{(arm, phase): trainer config}`` as ``plan`` would train them (phase ``general`` for a
    one-phase arm, then its second phase's name)."""
    configs: dict[tuple[str, str], Any] = {}
    for arm in plan.arms():
        configs[(arm.name, "general")] = stage_config(plan, arm, root)
        if phase := plan.second_phase(arm.stage):
            configs[(arm.name, phase.name)] = phase_config(plan, arm, root, phase)
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


def suite_sizes(plan: StudyPlan, root: Path) -> dict[str, int]:
    """Cases in each suite ``plan`` evaluates on, and in its real-history slice (``history``,
    whose suite folder ``root`` holds): each file read once, whatever the sample sizes."""
    sizes = {suite: len(load_suite(suite, plan.evals_dir)) for suite in SUITES}
    sizes["history"] = len(load_suite("variant", history_evals(plan, root)))
    return sizes


def eval_runs(plan: StudyPlan, sizes: dict[str, int]) -> dict[str, tuple[int, int]]:
    """``{kind: (cases a run holds, arms that make it)}`` for each evaluation run ``plan`` makes,
    from the suites' :func:`suite_sizes` (a limit of 0 takes a whole suite).

    >>> from harnessctl.experiment import quick_plan
    >>> sizes = {"livestream": 200, "variant": 300, "robustness": 200, "ifeval": 1000, "history": 6}
    >>> eval_runs(quick_plan(), sizes)
    {'suites': (30, 5), 'history': (6, 5), 'ifeval': (10, 5), 'served': (10, 1)}
    """
    arms = plan.arms()

    def held(suite: str, limit: int) -> int:  # as many as eval's even-spread sample takes
        return min(limit, sizes[suite]) if limit else sizes[suite]

    runs = {
        "suites": (sum(held(s, plan.eval_limit) for s in AGENT_SUITES), len(arms)),
        "history": (held("history", plan.history_limit), len(arms)),
        "ifeval": (held("ifeval", plan.ifeval_limit), len(arms)),
    }
    if any(a.name == FINAL_ARM for a in arms):
        runs["served"] = (held("livestream", plan.eval_limit), 1)
    return runs


#: What makes two checkpoints the same size for timing their answers.
_SIZE_KEYS = (
    "model_type",
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
)


def eval_model(root: Path) -> tuple[Path, str]:
    """The checkpoint whose evaluation is timed, and what it is: the shipped HAT where it has the
    size of the probe's own models, else the probe's final arm (trained a few steps only)."""
    import json

    own = root / "arms" / FINAL_ARM / "model"
    proxy = registry.SHIPPED_DATA_DIR / EVAL_PROXY  # read when called
    if proxy.is_dir() and not missing_for_inference(proxy):
        configs = [json.loads((folder / "config.json").read_text(encoding="utf-8")) for folder in (proxy, own)]
        if all(configs[0].get(k) == configs[1].get(k) for k in _SIZE_KEYS):
            return proxy, f"shipped:{EVAL_PROXY}"
        why = f"shipped:{EVAL_PROXY} is not the size of this plan's model"
    else:
        why = f"no shipped:{EVAL_PROXY} checkpoint in the package"
    return own, f"the probe's own {FINAL_ARM} arm, a few steps trained ({why}): answers may run shorter or longer"


def probe_evaluation(
    plan: StudyPlan, root: Path, say: Callable[[str], None], progress: bool
) -> tuple[list[EvalEstimate], str]:
    """Time every evaluation run ``plan`` makes on a few cases of its own (:data:`PROBE_EVAL_CASES`,
    IFEval :data:`PROBE_IFEVAL_PROMPTS`) with the model :func:`eval_model` picks, through the
    study's own path (``served`` through the embedded server); returns the runs projected onto
    the plan's cases and arms, and the model timed."""
    model, timed_on = eval_model(root)
    sizes = {"eval_limit": PROBE_EVAL_CASES, "history_limit": PROBE_EVAL_CASES, "ifeval_limit": PROBE_IFEVAL_PROMPTS}
    probe = apply_overrides(plan, [f"{k}={min(getattr(plan, k) or n, n)}" for k, n in sizes.items()])
    eval_root = root / "eval-probe"
    shutil.copytree(model, eval_root / "arms" / FINAL_ARM / "model")
    sizes = suite_sizes(plan, eval_root)
    planned, probed = eval_runs(plan, sizes), eval_runs(probe, sizes)
    say(f"timing evaluation on {timed_on.split(' (')[0]}: a few cases of every run")
    # a first, uncounted run: it loads what every later run reuses (the first counted one would carry it)
    warm_up = EvalConfig(
        suites=["livestream"],
        model=f"local:{(eval_root / 'arms' / FINAL_ARM / 'model').resolve()}",
        limit=2,
        jobs=plan.eval_jobs,
        cache=False,
        harness_path=plan.harness,
        evals_dir=plan.evals_dir,
        runs_dir=str(eval_root / "warm-up"),
        max_tokens=plan.eval_max_tokens,
        seed=plan.seed,
        max_error_share=1.0,
    )
    run_eval(warm_up, run_id="warm-up")
    runs = []
    for kind, (cases, arms) in planned.items():
        probe_cases = probed[kind][0]
        if not cases or not probe_cases:
            continue
        _, seconds = evaluate_arm(probe, ARMS[FINAL_ARM], eval_root, lambda m: None, progress, kind=kind)
        runs.append(EvalEstimate(kind, cases, arms, probe_cases, round(seconds / probe_cases, 4)))
    return runs, timed_on


def estimate_study(
    plan: StudyPlan, work: str | Path | None = None, *, say: Callable[[str], None] = print, progress: bool = False
) -> StudyEstimate:
    """Train ``plan``'s probe (:func:`probe_plan`) in ``work`` (a scratch folder when None,
    removed after), project each phase's measured time per step onto the plan's steps (held-out
    scoring timed once and counted at every check), then time the plan's evaluation runs on a few
    cases each (:func:`probe_evaluation`). Raises ``StudyInterrupted`` when stopped with Ctrl-C
    during a probe's training (in a scratch folder: saying that nothing of a study was written)."""
    check_inputs(plan)
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
            model_dir = root / "arms" / name / "model"
            checks = [e.check_seconds for e in arm_extras(cfg.stage) if e.check_seconds is not None]
            heldout_s = sum(
                (seconds(cfg, model_dir, probe.data_n, plan.data_n, say, name, phase) for seconds in checks), 0.0
            )
            phases.append(PhaseEstimate(name, phase, int(cfg.max_steps), measured.steps, per_step, round(heldout_s, 1)))
        hardware = next((r["hardware"] for r in records.values() if r.get("hardware")), {})
        evaluation, timed_on = probe_evaluation(plan, root, say, progress)
        return StudyEstimate(phases, data_s, time.perf_counter() - started, hardware, evaluation, timed_on)
    except StudyInterrupted:
        if not scratch:
            raise
        raise StudyInterrupted(
            "the estimate's scratch folder is removed; nothing of a study was written", then=""
        ) from None
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
