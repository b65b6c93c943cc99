"""What the HAT study runs: its arms (a chain of trainer stages, each from a parent arm) and the
sizes of everything (data, steps per stage, evaluation), as one plain, recorded plan.

Arms, in the order they run (a parent always runs first):

- ``base`` — stage 0 from scratch (or ``base_model`` continued) on the general corpus;
- ``fixed-sft`` — base → SFT on trajectories under the shipped harness only;
- ``hsa-sft`` — base → SFT on trajectories under augmented harnesses (same cases, same steps);
- ``hsa-sft-opd`` — hsa-sft → general on-policy distillation to the base;
- ``hat`` — hsa-sft-opd → GRPO in the simulator with a fresh variant per prompt group;
- with ``ablations``: ``hsa-only-rl`` (fixed-sft → HSA-RL) and ``hsa-only-sft`` (hsa-sft → RL without
  HSA) — both skip OPD, so they compare with each other: where HSA matters more.

An extension may give a stage's arms a second phase (:class:`StudyPhase`, :func:`register_phase`):
the experimental wing's copy phase of stage 0 and anchor phase of OPD, both in the full preset.

>>> plan = quick_plan()
>>> [a.name for a in plan.arms()]
['base', 'fixed-sft', 'hsa-sft', 'hsa-sft-opd', 'hat']
>>> apply_overrides(plan, ["eval_limit=2", "sft.max_steps=3"]).stage_overrides["sft"]["max_steps"]
'3'
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.eval.store import RunError, check_run_id
from harnessctl.extensions import load_extensions
from trainer.config import ConfigError, coerce, parse_set
from trainer.stage_configs import config_class


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
#: The trainer stages a plan sizes, in the order the arms run them; an extension may add a second
#: phase after one of them (:func:`register_phase`).
CORE_STAGES = ("base", "sft", "distill", "rl")
#: The presets' episodes in flight in the in-process evaluation runs (16 beat 8 on two cores:
#: docs/studies/compute.md).
EVAL_JOBS = 16


@dataclass(frozen=True)
class StudyPhase:
    """A second phase an arm's trainer stage goes on with, registered by an extension: the arm
    trains its stage as planned into ``arms/<arm>/general/``, then this phase from that model into
    ``arms/<arm>/model/``. The plan sizes it as a stage of its own (``--set NAME.FIELD=VALUE``,
    fields of ``stage``'s trainer config); 0 ``max_steps`` is no such phase."""

    #: The plan stage that sizes it (``--set NAME.max_steps=N``).
    name: str
    #: The trainer stage it continues, and whose arms have it.
    stage: str
    #: What it does, for the progress line (``{parent}``: the arm's parent arm).
    label: str
    #: Fields it takes unless the plan's phase sets them (over the first phase's fields).
    defaults: dict[str, Any] = field(default_factory=dict)
    #: The first phase's fields it does not keep (its size).
    resets: tuple[str, ...] = ("max_steps",)
    #: ``{preset: fields}``: the presets that have this phase, and its fields there.
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``wiring(plan, arm, root)``: fields from the study folder (a teacher, prompts), over all others.
    wiring: Callable[..., dict[str, Any]] | None = None
    #: ``finish(cfg, fields)``: the phase's trainer config settled after it is made (fields: the plan's).
    finish: Callable[..., Any] | None = None
    #: ``first(cfg)``: the arm's first phase's config settled before it trains.
    first: Callable[..., Any] | None = None
    #: ``--set`` items (after ``NAME.max_steps``) that make the phase fit an estimate's probe.
    probe_sets: tuple[str, ...] = ()
    #: ``normal(fields, stages)``: the phase's plan fields as a plan written before a field existed
    #: meant them (text values; ``stages``: every stage's), for comparing plans.
    normal: Callable[..., dict[str, str]] | None = None


@dataclass(frozen=True)
class ArmExtra:
    """Fields an extension gives every arm of one trainer stage (both phases), what an estimate's
    probe sets for it, and the seconds its in-training checks add to a phase's estimate."""

    stage: str
    #: ``defaults(arm, root)``: fields unless the plan sets them.
    defaults: Callable[..., dict[str, Any]]
    #: ``--set`` items an estimate's probe plan adds (checks that would count several times over).
    probe_sets: tuple[str, ...] = ()
    #: ``check_seconds(cfg, model_dir, probe_cases, plan_cases, say, where)``: seconds of checks.
    check_seconds: Callable[..., float] | None = None


_PHASES: dict[str, StudyPhase] = {}
_ARM_EXTRAS: list[ArmExtra] = []


def register_phase(phase: StudyPhase) -> None:
    """Add ``phase`` to every plan (a stage of its own, after ``phase.stage``); refused when a
    stage of that name exists or its stage already has a second phase."""
    if phase.name in CORE_STAGES or phase.name in _PHASES:
        raise ValueError(f"study phase {phase.name!r}: a stage of that name exists")
    if phase.stage not in CORE_STAGES or any(p.stage == phase.stage for p in _PHASES.values()):
        raise ValueError(f"study phase {phase.name!r}: {phase.stage!r} is not a stage, or has a second phase")
    _PHASES[phase.name] = phase


def register_arm_extra(extra: ArmExtra) -> None:
    """Give every arm of ``extra.stage`` its fields (see :class:`ArmExtra`)."""
    _ARM_EXTRAS.append(extra)


def study_phases() -> dict[str, StudyPhase]:
    """The registered phases by name (loading the installed extensions first)."""
    load_extensions()
    return dict(_PHASES)


def arm_extras(stage: str | None = None) -> list[ArmExtra]:
    """The registered arm fields (of ``stage``'s arms only, when given)."""
    load_extensions()
    return [e for e in _ARM_EXTRAS if stage is None or e.stage == stage]


def plan_stages() -> tuple[str, ...]:
    """The stages a plan sizes: the trainer's four, each followed by its registered second phase.

    >>> plan_stages()[0], plan_stages()[-1]
    ('base', 'rl')
    """
    phases = study_phases().values()
    return tuple(s for stage in CORE_STAGES for s in (stage, *(p.name for p in phases if p.stage == stage)))


def config_stage(stage: str) -> str:
    """The trainer stage whose config fields a plan stage takes (a phase's is the stage it continues).

    >>> config_stage("sft")
    'sft'
    """
    phase = study_phases().get(stage)
    return phase.stage if phase else stage


def phase_hint() -> str:
    """Where second phases come from, said when a plan names a stage no installed extension
    registers (a ``plan.json`` recorded with the experimental wing's copy or anchor phase); empty
    while any phase is registered."""
    if study_phases():
        return ""
    return (
        " (second phases such as copy and anchor are registered by extensions under the entry-point group "
        "harnessctl.extensions, the package's experimental wing among them: reinstall harnessctl with "
        "`pip install -e .` to load it)"
    )


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
    #: Trajectory cases of both SFT datasets (the same cases, fixed harness vs augmented), sized for
    #: about one pass of SFT: seen four times, rows are learned by heart (docs/studies/full-1200.md).
    data_n: int = 6000
    #: HSA variants the augmented dataset draws from (a tenth held out for validation). Many, so
    #: that no listing repeats often enough to be learned by name (docs/studies/full.md).
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
    #: ``eval_limit``: the OPD goal compares pass rates a few points apart (docs/studies/full.md).
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
        unknown = sorted(set(self.stage_overrides) - set(plan_stages()))
        if unknown:
            stages = ", ".join(plan_stages())
            raise PlanError(f"stage_overrides: unknown stage {unknown[0]!r}; stages are {stages}{phase_hint()}")
        for stage, values in self.stage_overrides.items():
            _check_stage_fields(stage, values)

    def second_phase(self, stage: str) -> StudyPhase | None:
        """The second phase ``stage``'s arms go on with in this plan: a registered phase of that
        stage that the plan sizes with ``max_steps`` other than 0 (``--set copy.max_steps=0``
        turns the full preset's copy phase off); None: the stage runs once.

        >>> quick_plan().second_phase("base") is None
        True
        """
        phase = next((p for p in study_phases().values() if p.stage == stage), None)
        if phase is None:
            return None
        fields = self.stage_overrides.get(phase.name)
        on = fields is not None and str(fields.get("max_steps", "")).strip() != "0"
        return phase if on else None

    def phases(self) -> list[StudyPhase]:
        """Every second phase this plan trains, in stage order."""
        return [p for stage in CORE_STAGES if (p := self.second_phase(stage))]

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
    """The full study: what the shipped checkpoints were trained with, and the second phases the
    installed extensions give this preset (the experimental wing: stage 0's copy phase and OPD's
    anchor phase; docs/studies/copying.md, docs/studies/copyphase.md)."""
    kw.setdefault("eval_jobs", EVAL_JOBS)
    return StudyPlan(
        preset="full",
        data_n=6000,
        data_variants=1000,
        eval_limit=40,
        history_limit=40,
        ifeval_limit=0,
        stage_overrides=with_phases(
            "full",
            {
                "base": {"max_steps": 300, "rows": 4800},
                "sft": {"max_steps": 600},
                "distill": {"max_steps": 60, "n_prompts": 240},
                "rl": {"max_steps": 20, "cases": 120},
            },
        ),
        **kw,
    )


def with_phases(preset: str, stages: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``stages`` (a preset's stage fields) with the fields of every registered phase that
    ``preset`` has, each after the stage it continues.

    >>> with_phases("quick", {"sft": {"max_steps": 40}})
    {'sft': {'max_steps': 40}}
    """
    phases = [p for p in study_phases().values() if preset in p.presets]
    out: dict[str, dict[str, Any]] = {}
    for stage, fields in stages.items():
        out[stage] = fields
        out.update({p.name: dict(p.presets[preset]) for p in phases if p.stage == stage})
    return out


def smollm2_plan(**kw: Any) -> StudyPlan:
    """The study on the pretrained base SmolLM2-135M-Instruct: the base arm is the base zero-shot,
    every other arm a LoRA adapter on it (``trainer/configs/smollm2-cpu.yaml``: r=16 on the top 20
    of 30 layers). Sized for a 2-core CPU in resumable pieces (docs/studies/smollm2.md)."""
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

    cls = config_class(config_stage(stage))
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
            if stage not in plan_stages() or not name:
                stages = ", ".join(plan_stages())
                raise PlanError(f"--set {item!r}: {stage!r} is not a stage; use {stages}{phase_hint()}")
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


def changed_stages(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The stages (and second phases) whose fields differ between two plans' dicts.

    >>> changed_stages({"stage_overrides": {"sft": {"max_steps": "600"}, "rl": {}}},
    ...                {"stage_overrides": {"sft": {"max_steps": 300}, "rl": {}}})
    ['sft']
    """
    before = _normal(old).get("stage_overrides") or {}
    after = _normal(new).get("stage_overrides") or {}
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


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
    for phase in study_phases():  # a phase the preset has and the plan lacks: a study from before the preset had it
        if phase in (made.get("stage_overrides") or {}) and phase not in (wanted.get("stage_overrides") or {}):
            options += ["--set", f"{phase}.max_steps=0"]
    return options


def _normal(plan: dict[str, Any]) -> dict[str, Any]:
    """Stage values as text: ``--set sft.max_steps=600`` (a string, checked when the stage's config
    is built) and a preset's ``600`` are the same plan; a second phase of 0 steps is no such phase
    (a study started before the full preset had one continues with ``--set copy.max_steps=0``);
    and each registered phase reads its fields as a plan from before one of them existed meant them.

    >>> _normal({"stage_overrides": {"sft": {"max_steps": 600}}})
    {'stage_overrides': {'sft': {'max_steps': '600'}}}
    """
    stages = plan.get("stage_overrides")
    if not isinstance(stages, dict):
        return plan
    normal = {
        stage: {k: str(v) for k, v in fields.items()} if isinstance(fields, dict) else fields
        for stage, fields in stages.items()
    }
    for name, phase in study_phases().items():
        fields = normal.get(name)
        if not isinstance(fields, dict):
            continue
        if fields.get("max_steps", "").strip() == "0":
            del normal[name]
        elif phase.normal is not None:
            normal[name] = phase.normal(fields, normal)
    return {**plan, "stage_overrides": normal}
