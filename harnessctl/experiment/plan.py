"""What the HAT study runs: its arms (a chain of trainer stages, each from a parent arm) and the
sizes of everything (data, steps per stage, evaluation), as one plain, recorded plan.

Arms, in the order they run (a parent always runs first):

- ``base`` — stage 0 from scratch (or ``base_model`` continued) on the general corpus; with a
  ``copy`` stage in the plan (the full preset's ``copy.max_steps=2500``; ``0`` turns it off) it
  goes on in a second phase on copy rows at a steady learning rate, until the model copies a fresh
  code from its context;
- ``fixed-sft`` — base → SFT on trajectories under the shipped harness only;
- ``hsa-sft`` — base → SFT on trajectories under augmented harnesses (same cases, same steps);
- ``hsa-sft-opd`` — hsa-sft → general on-policy distillation to the base;
- ``hat`` — hsa-sft-opd → GRPO in the simulator with a fresh variant per prompt group;
- with ``ablations``: ``hsa-only-rl`` (fixed-sft → HSA-RL) and ``hsa-only-sft`` (hsa-sft → RL without
  HSA) — both skip OPD, so they compare with each other: where HSA matters more.

>>> plan = quick_plan()
>>> [a.name for a in plan.arms()]
['base', 'fixed-sft', 'hsa-sft', 'hsa-sft-opd', 'hat']
>>> apply_overrides(plan, ["eval_limit=2", "sft.max_steps=3"]).stage_overrides["sft"]["max_steps"]
'3'
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.eval.store import RunError, check_run_id


class PlanError(HarnessctlError, ValueError):
    """A plan value is wrong (an unknown field, a bad number): the message names it and what to do."""


@dataclass(frozen=True)
class Arm:
    """One arm of the study: a trainer ``stage`` run from the ``parent`` arm's model."""

    name: str
    label: str
    stage: str  # base | sft | distill | rl
    parent: str | None = None
    data: str | None = None  # sft: "fixed" or "hsa"
    hsa: bool = True  # rl: a fresh variant per prompt group
    ablation: bool = False


MAIN_ARMS = (
    Arm("base", "base (stage 0)", "base"),
    Arm("fixed-sft", "fixed-SFT", "sft", parent="base", data="fixed"),
    Arm("hsa-sft", "HSA-SFT", "sft", parent="base", data="hsa"),
    Arm("hsa-sft-opd", "HSA-SFT + OPD", "distill", parent="hsa-sft"),
    Arm("hat", "HAT (+ HSA-RL)", "rl", parent="hsa-sft-opd", hsa=True),
)
ABLATION_ARMS = (
    Arm("hsa-only-rl", "HSA only at RL", "rl", parent="fixed-sft", hsa=True, ablation=True),
    Arm("hsa-only-sft", "HSA only at SFT", "rl", parent="hsa-sft", hsa=False, ablation=True),
)
ARMS = {a.name: a for a in MAIN_ARMS + ABLATION_ARMS}
SUITES = ("livestream", "variant", "robustness", "ifeval")
#: Stages a plan sizes: the trainer's four; ``copy``, stage 0's optional second phase (stage 0
#: fields, applied over ``base``'s); and ``anchor``, the OPD arm's optional second phase (distill
#: fields, applied over ``distill``'s).
STAGES = ("base", "copy", "sft", "distill", "anchor", "rl")
#: The second phase of each stage that has one, by the plan stage that sizes it.
PHASES = {"copy": "base", "anchor": "distill"}
#: The copy phase's settings unless the plan sets them: half copy rows at a steady learning rate
#: (copying forms in a phase change that a decayed cosine schedule or diluted rows stop short of),
#: and the copy probe on 60 prompts per kind; padding-free batches (these rows are 60 % padding in
#: random batches: 1.2-1.6x faster a step here, the same losses).
COPY_PHASE_DEFAULTS = {
    "copy_share": 0.5,
    "lr_scheduler_type": "constant_with_warmup",
    "copy_probe": 60,
    "padding_free": True,
}
#: The anchor phase's settings unless the plan sets them: after OPD to the base on general prompts,
#: distillation back toward the SFT parent on prompts cut at every step of the parent's own
#: trajectories (OPD alone stopped the product lookups; 20 such steps brought them back).
ANCHOR_PHASE_DEFAULTS = {"max_steps": 20, "n_prompts": 240, "prompt_turn": "any"}
#: The presets' episodes in flight in the in-process evaluation runs: on two CPU cores 16 took
#: 14-17 % less time than 8 (bigger batches per ``model.generate``) and 32 gained little more.
EVAL_JOBS = 16


def config_stage(stage: str) -> str:
    """The trainer stage whose config fields a plan stage takes (``copy`` is stage 0's).

    >>> config_stage("copy"), config_stage("anchor"), config_stage("sft")
    ('base', 'distill', 'sft')
    """
    return PHASES.get(stage, stage)


@dataclass
class StudyPlan:
    """Everything that decides what a study does; written to ``plan.json`` and checked on resume."""

    preset: str = "full"
    seed: int = 0
    ablations: bool = False
    harness: str = "harnesses/livecommerce"
    #: Trainer config file (or a shipped name) every stage starts from.
    train_config: str = "tiny-cpu"
    #: Empty: stage 0 builds the tiny model from scratch; else stage 0 continues this checkpoint.
    base_model: str = ""
    #: A pretrained base (a known base such as ``smollm2-135m``, or a model folder) that is the
    #: ``base`` arm itself, untrained: the SFT arms train LoRA adapters on it and OPD distills to
    #: it. Empty: stage 0 trains the tiny model (``base_model`` aside).
    pretrained_base: str = ""
    #: Trajectory cases of both SFT datasets (the same cases, fixed harness vs augmented). Sized for
    #: about one pass of SFT over them: the oracle writes thousands a minute, and a tiny model that
    #: sees the same rows four times starts learning them by heart (1,200 rows, 600 steps, shipped
    #: harness: training loss 0.27 against 0.37 on held-out rows).
    data_n: int = 6000
    #: HSA variants the augmented dataset draws from (a tenth held out for validation). Many, so
    #: that no listing repeats often enough to be learned by name: with 50 (45 in training) the
    #: held-out-variant loss stayed at 1.17 while the training loss reached 0.43.
    data_variants: int = 1000
    #: HSA strength of the augmented dataset's variants: the share of skills and tools renamed, of
    #: rules and descriptions rewritten, and so on (the variant suite's held-out variants use 0.5-0.7).
    data_strength: float = 0.5
    #: Share of the augmented dataset's training cases left under the shipped harness. With 0.3 and
    #: strength 0.5, a case's skill keeps its shipped name about two times in three, and a model that
    #: never reads the listing is right that often.
    data_canonical_share: float = 0.3
    #: Share of both datasets' viewer messages reworded (``augment --vary-wording``): the suites
    #: word their cases from templates held out of training, and a tiny model keys on the words
    #: of the templates it saw. 0 in both presets until it is measured to help.
    data_vary_wording: float = 0.0
    #: A viewer-phrasings file (``augment --phrasings``) both datasets draw from beside the
    #: built-in training templates; empty: none. Its phrasings are recorded in each dataset.json.
    data_phrasings: str = ""
    #: Both datasets' skill-loading turns open with a ``<think>`` note quoting the loaded skill's
    #: catalog line (``augment --quote-skills``): the renamed name then follows words the model can
    #: find in the listing, the copy stage 0's pick rows practise. Off in both presets.
    data_quote_skills: bool = False
    #: Cases per suite in every arm's evaluation (an even spread of the suite); 0: whole suites.
    eval_limit: int = 100
    #: Cases of the real-history slice (the variant suite's cases under v1 and v2) per arm; 0: all of them.
    history_limit: int = 0
    #: IFEval prompts per arm, scored in a run of their own; 0: every prompt (1,000). Not
    #: ``eval_limit``: the OPD goal compares pass rates a few points apart, and 40 prompts drew
    #: the base at 17.5 where 1,000 drew it at 8.1. A thousand cost about 90 s per arm on one core.
    ifeval_limit: int = 0
    eval_max_tokens: int = 128
    #: Episodes in flight at once in the in-process evaluation runs (batched by the embedded model):
    #: speed only, no score changes with it.
    eval_jobs: int = 1
    #: Episodes in flight at once in the final arm's run through the embedded server, where its
    #: latency P50/P95 is measured: part of what that latency means, so it is its own field.
    served_jobs: int = 8
    evals_dir: str = "evals"
    #: Config fields per stage, over the trainer config (``max_steps`` and the like).
    stage_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("data_n", "data_variants", "eval_max_tokens", "eval_jobs", "served_jobs"):
            if int(getattr(self, name)) < 1:
                raise PlanError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("data_strength", "data_canonical_share", "data_vary_wording"):
            value = float(getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise PlanError(f"{name} must be within [0, 1], got {getattr(self, name)}")
        for name in ("eval_limit", "history_limit", "ifeval_limit"):
            if int(getattr(self, name)) < 0:
                raise PlanError(f"{name} must be 0 (every case) or positive, got {getattr(self, name)}")
        unknown = sorted(set(self.stage_overrides) - set(STAGES))
        if unknown:
            raise PlanError(f"stage_overrides: unknown stage {unknown[0]!r}; stages are {', '.join(STAGES)}")
        for stage, values in self.stage_overrides.items():
            _check_stage_fields(stage, values)

    def copy_phase(self) -> bool:
        """Whether stage 0 has its second phase on copy rows: the plan has a ``copy`` stage whose
        ``max_steps`` is not 0 (``--set copy.max_steps=0`` turns the full preset's phase off).

        >>> full_plan().copy_phase(), quick_plan().copy_phase()
        (True, False)
        >>> apply_overrides(full_plan(), ["copy.max_steps=0"]).copy_phase()
        False
        """
        return self._phase("copy")

    def anchor_phase(self) -> bool:
        """Whether the OPD arm has its second phase, back toward its SFT parent on the agent's own
        steps: the plan has an ``anchor`` stage whose ``max_steps`` is not 0.

        >>> full_plan().anchor_phase(), quick_plan().anchor_phase()
        (True, False)
        """
        return self._phase("anchor")

    def _phase(self, stage: str) -> bool:
        fields = self.stage_overrides.get(stage)
        return fields is not None and str(fields.get("max_steps", "")).strip() != "0"

    def arms(self) -> list[Arm]:
        """The arms this plan runs, parents first."""
        return list(MAIN_ARMS) + (list(ABLATION_ARMS) if self.ablations else [])

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StudyPlan:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: copy.deepcopy(v) for k, v in d.items() if k in known})


def full_plan(**kw: Any) -> StudyPlan:
    """The full study: what the shipped checkpoints were trained with. Stage 0 has a copy phase
    of 2,500 steps (a base that copies a code from its context: without it no arm ever named the
    product on screen); the quick preset's 100-step base is too short for copying to form, so it
    has none. OPD has an anchor phase back toward its SFT parent (OPD alone stopped the agent's
    product lookups), sized on the SFT data's held-out rows: it stops once their loss is within 5 %
    of the parent's, after 60 steps at most."""
    kw.setdefault("eval_jobs", EVAL_JOBS)
    return StudyPlan(
        preset="full",
        data_n=6000,
        data_variants=1000,
        eval_limit=40,
        history_limit=40,
        ifeval_limit=0,
        stage_overrides={
            "base": {"max_steps": 300, "rows": 4800},
            "copy": {"max_steps": 2500},
            "sft": {"max_steps": 600},
            "distill": {"max_steps": 60, "n_prompts": 240},
            "anchor": {"max_steps": 60, "stop_near_teacher": 0.05},
            "rl": {"max_steps": 20, "cases": 120},
        },
        **kw,
    )


def smollm2_plan(**kw: Any) -> StudyPlan:
    """The study on the pretrained base SmolLM2-135M-Instruct: the base arm is the base zero-shot,
    every other arm a LoRA adapter on it (``trainer/configs/smollm2-cpu.yaml``: r=16 on the top 20
    of 30 layers). Sized for a 2-core CPU in resumable pieces: an SFT row of ~1,000 tokens costs
    7-15 s there, so an arm's 600 rows (300 steps of 2) take one to two hours."""
    kw.setdefault("eval_jobs", 8)
    return StudyPlan(
        preset="smollm2",
        pretrained_base="smollm2-135m",
        train_config="smollm2-cpu",
        data_n=1200,
        data_variants=400,
        eval_limit=40,
        history_limit=40,
        ifeval_limit=100,
        eval_max_tokens=96,
        stage_overrides={
            "sft": {"max_steps": 300},
            "distill": {"max_steps": 40, "n_prompts": 160},
            "rl": {"max_steps": 6, "cases": 24},
        },
        **kw,
    )


def quick_plan(**kw: Any) -> StudyPlan:
    """The same arms, smaller everything (CI runs it: ``make study-quick``)."""
    kw.setdefault("eval_jobs", EVAL_JOBS)
    return StudyPlan(
        preset="quick",
        data_n=400,
        data_variants=100,
        eval_limit=10,
        history_limit=10,
        ifeval_limit=10,
        stage_overrides={
            "base": {"max_steps": 100, "rows": 1600},
            "sft": {"max_steps": 40},
            "distill": {"max_steps": 10, "n_prompts": 80},
            "rl": {"max_steps": 3, "cases": 24},
        },
        **kw,
    )


#: The bases ``experiment hat --base`` trains on: the tiny model from scratch, or LoRA adapters on
#: the pretrained SmolLM2-135M-Instruct.
BASES = ("tiny", "smollm2-135m")


def hat_study(
    base: str = "tiny",
    *,
    quick: bool = False,
    study_id: str | None = None,
    seed: int = 0,
    ablations: bool = False,
    overrides: list[str] | None = None,
) -> tuple[str, StudyPlan]:
    """The study ``experiment hat`` runs: its name (``study_id``, else ``quick``, ``full`` or
    ``smollm2``: a folder's name) and its plan, the preset of ``base`` (with ``quick``, the tiny
    model's small one) with ``overrides`` (``--set`` items) applied. Raises :class:`PlanError`.

    >>> name, plan = hat_study(quick=True, overrides=["eval_limit=2"])
    >>> name, plan.preset, plan.eval_limit
    ('quick', 'quick', 2)
    """
    if base not in BASES:
        raise PlanError(f"--base {base!r}: choose tiny or smollm2-135m")
    if base != "tiny" and quick:
        raise PlanError("--quick is the tiny model's preset; drop --base or --quick")
    name = study_id or ("quick" if quick else "full" if base == "tiny" else "smollm2")
    try:
        check_run_id(name)
    except RunError:
        raise PlanError(
            f"--id {name!r}: use letters, digits, '.', '_' or '-' (it names a folder under --out)"
        ) from None
    preset = quick_plan if quick else full_plan if base == "tiny" else smollm2_plan
    return name, apply_overrides(preset(seed=seed, ablations=ablations), overrides or [])


def _check_stage_fields(stage: str, values: dict[str, Any]) -> None:
    """Each field is one of the stage's trainer config fields and its value converts to the
    field's type; checked when the plan is made, so that a mistyped ``--set`` is refused before
    the study folder (and its ``plan.json``) exists."""
    from typing import get_type_hints

    from trainer.config import CONFIG_CLASSES, ConfigError, coerce

    cls = CONFIG_CLASSES[config_stage(stage)]
    hints = get_type_hints(cls)
    known = sorted(f.name for f in dataclasses.fields(cls))
    for name, value in values.items():
        if name not in known:
            raise PlanError(f"{stage}.{name}: unknown {stage} field (fields: {', '.join(known)})")
        try:
            coerce(name, value, hints[name])
        except ConfigError as e:
            raise PlanError(f"{stage}.{e}") from None


def apply_overrides(plan: StudyPlan, items: list[str]) -> StudyPlan:
    """``plan`` with ``FIELD=VALUE`` (a plan field) and ``STAGE.FIELD=VALUE`` (a trainer config
    field of one stage, checked when the stage's config is built) applied, in order."""
    from typing import get_type_hints

    from trainer.config import ConfigError, parse_set

    values = plan.to_dict()
    types = get_type_hints(StudyPlan)
    hints = {f.name: types[f.name] for f in dataclasses.fields(StudyPlan)}
    for item in items:
        try:
            key, value = parse_set(item, form="FIELD=VALUE or STAGE.FIELD=VALUE", example="sft.max_steps=20")
        except ConfigError as e:
            raise PlanError(str(e)) from None
        if "." in key:
            stage, _, name = key.partition(".")
            if stage not in STAGES or not name:
                raise PlanError(f"--set {item!r}: {stage!r} is not a stage; use {', '.join(STAGES)}")
            values["stage_overrides"].setdefault(stage, {})[name] = value
            continue
        if key not in hints or key in ("stage_overrides", "preset"):
            fields = sorted(k for k in hints if k not in ("stage_overrides", "preset"))
            raise PlanError(f"--set {key}: unknown plan field (fields: {', '.join(fields)}; or STAGE.FIELD)")
        values[key] = _coerce(key, value, hints[key])
    try:
        return StudyPlan.from_dict(values)
    except PlanError as e:
        raise PlanError(f"--set {e}") from None


def _coerce(name: str, value: str, hint: Any) -> Any:
    """A plan field's value from its ``--set`` text, as the trainer converts its fields
    (:func:`trainer.config.coerce`), except that a whole-number field takes only a whole number
    as written."""
    from trainer.config import ConfigError, coerce

    if hint is int:
        try:
            return int(value)
        except ValueError:
            raise PlanError(f"--set {name}: expected a whole number, got {value!r}") from None
    try:
        return coerce(name, value, hint)
    except ConfigError as e:
        raise PlanError(f"--set {e}") from None


def plan_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two plans' dicts (``field: old -> new``), for a refused resume.

    >>> plan_differences({"seed": 0, "eval_limit": 2}, {"seed": 1, "eval_limit": 2})
    ['seed: 0 -> 1']
    >>> plan_differences({"stage_overrides": {"sft": {"max_steps": "600"}}}, {"stage_overrides": {"sft": {"max_steps": 600}}})
    []
    """
    keys = sorted(set(old) | set(new))
    old, new = _normal(old), _normal(new)
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]


def plan_options(plan: dict[str, Any]) -> list[str]:
    """The ``experiment hat`` options that make this plan: its preset, seed and ablations, and a
    ``--set`` for each field that differs from the preset's. A refused resume names them.

    >>> plan_options(apply_overrides(full_plan(), ["sft.max_steps=1600"]).to_dict())
    ['--set', 'sft.max_steps=1600']
    >>> plan_options(apply_overrides(quick_plan(seed=3), ["eval_limit=5"]).to_dict())
    ['--quick', '--seed', '3', '--set', 'eval_limit=5']
    >>> plan_options(apply_overrides(smollm2_plan(), ["sft.viewers_per_row=4"]).to_dict())
    ['--base', 'smollm2-135m', '--set', 'sft.viewers_per_row=4']
    """
    preset = plan.get("preset", "full")
    seed = int(plan.get("seed", 0))
    ablations = bool(plan.get("ablations", False))
    flags = {"quick": ["--quick"], "smollm2": ["--base", "smollm2-135m"]}
    options = flags.get(preset, []) + (["--seed", str(seed)] if seed else [])
    options += ["--ablations"] if ablations else []
    factory = {"quick": quick_plan, "smollm2": smollm2_plan}.get(preset, full_plan)
    made = _normal(factory(seed=seed, ablations=ablations).to_dict())
    wanted = _normal(plan)
    for key in sorted(k for k in wanted if k not in ("preset", "seed", "ablations", "eval_jobs", "stage_overrides")):
        if wanted[key] != made.get(key):
            value = wanted[key]
            options += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    for stage, fields in sorted((wanted.get("stage_overrides") or {}).items()):
        preset_fields = (made.get("stage_overrides") or {}).get(stage) or {}
        for name, value in sorted(fields.items()):
            if preset_fields.get(name) != value:
                options += ["--set", f"{stage}.{name}={value}"]
    for phase in PHASES:  # a phase the preset has and the plan lacks: a study from before the preset had it
        if phase in (made.get("stage_overrides") or {}) and phase not in (wanted.get("stage_overrides") or {}):
            options += ["--set", f"{phase}.max_steps=0"]
    return options


def _normal(plan: dict[str, Any]) -> dict[str, Any]:
    """Stage values as text: ``--set sft.max_steps=600`` (a string, checked when the stage's config
    is built) and a preset's ``600`` are the same plan; a second phase (copy, anchor) of 0 steps is
    no such phase (a study started before the full preset had one continues with
    ``--set copy.max_steps=0`` or ``--set anchor.max_steps=0``).

    >>> _normal({"stage_overrides": {"copy": {"max_steps": 0}, "sft": {"max_steps": 600}}})
    {'stage_overrides': {'sft': {'max_steps': '600'}}}

    An anchor phase that does not say ``stop_near_teacher`` has none, as before the field existed:

    >>> _normal({"stage_overrides": {"anchor": {"max_steps": 20}}})
    {'stage_overrides': {'anchor': {'max_steps': '20', 'stop_near_teacher': '0'}}}
    """
    stages = plan.get("stage_overrides")
    if not isinstance(stages, dict):
        return plan
    normal = {
        stage: {k: str(v) for k, v in fields.items()} if isinstance(fields, dict) else fields
        for stage, fields in stages.items()
    }
    for phase in PHASES:
        if isinstance(normal.get(phase), dict) and normal[phase].get("max_steps", "").strip() == "0":
            del normal[phase]
    anchor = normal.get("anchor")
    if isinstance(anchor, dict) and "stop_near_teacher" not in anchor:
        # a plan from before the anchor phase stopped on held-out rows ran its max_steps: the
        # phase inherits distill's value, and the trainer's is 0 (off)
        distill = normal.get("distill") if isinstance(normal.get("distill"), dict) else {}
        normal["anchor"] = {**anchor, "stop_near_teacher": distill.get("stop_near_teacher", "0")}
    return {**plan, "stage_overrides": normal}
