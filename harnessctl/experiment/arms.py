"""One arm of the HAT study: its trainer config (the plan's, the arm's wiring), its training into
``arms/<arm>/model`` (continued from the last checkpoint; a second phase where an extension adds
one), and the study's errors. The study runner (:mod:`.runner`) and the side-by-side trainer
(:mod:`.side_by_side`) both train arms through :func:`train_arm`.

>>> cfg = stage_config(quick_plan(), ARMS["hsa-sft"], Path("experiments/quick"))   # doctest: +SKIP
>>> train_arm(quick_plan(), ARMS["hsa-sft"], Path("experiments/quick"), print, True)["steps"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError, Interrupted
from harnessctl.eval.store import atomic_write
from harnessctl.models.adapters import base_entry
from harnessctl.models.bases import BaseError, resolve_base
from trainer.common import MANIFEST, TrainError, last_checkpoint
from trainer.config import ConfigError
from trainer.stage_configs import load_config

from .plan import Arm, StudyPhase, StudyPlan, arm_extras

PLAN_FILE, ARM_FILE, TRAIN_FILE = "plan.json", "arm.json", "train.json"
#: The first phase of an arm trained in two (a registered second phase, :class:`~.plan.StudyPhase`):
#: its model folder and its train.json.
GENERAL_DIR, GENERAL_FILE = "general", "general.json"

Say = Callable[[str], None]


class StudyError(HarnessctlError, ValueError):
    """Bad input to a study (a plan, a folder, a trainer config): the message says what to do."""


class StudyInterrupted(Interrupted):
    """Ctrl-C during an arm's training: its checkpoint is saved; rerun the same command to continue."""

    def __init__(self, message: str, then: str = "run the same command again to continue"):
        super().__init__(message, then)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except json.JSONDecodeError:
        return None


def _write_json(path: Path, obj: Any) -> None:
    atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def stage_config(plan: StudyPlan, arm: Arm, root: Path) -> Any:
    """The trainer config of ``arm``'s stage: the plan's trainer config, its per-stage overrides,
    then the arm's own wiring (output, parent model, data, teacher, HSA), which always wins."""
    wiring = _wiring(plan, root / "arms" / arm.name / "model")
    if arm.parent:
        wiring["model"] = str(root / "arms" / arm.parent / "model")
    elif plan.base_model:
        wiring["model"] = plan.base_model.removeprefix("local:")
    if arm.stage == "sft":
        wiring["data"] = str(root / "data" / str(arm.data))
    if arm.stage == "distill":
        wiring["teacher"] = str(root / "arms" / "base" / "model")
    if arm.stage == "rl":
        wiring["hsa"] = arm.hsa
    overrides = {**_arm_defaults(arm, root), **plan.stage_overrides.get(arm.stage, {}), **wiring}
    try:
        cfg = load_config(arm.stage, plan.train_config, overrides)
    except ConfigError as e:
        raise StudyError(f"arm {arm.name} ({arm.stage}): {e}") from None
    return _curve_points(cfg, plan.stage_overrides.get(arm.stage, {}))


def _arm_defaults(arm: Arm, root: Path) -> dict[str, Any]:
    """Fields an arm gets unless the plan sets them: those the installed extensions give its
    stage's arms (the experimental wing: a distillation arm scores its SFT parent's held-out rows)."""
    fields: dict[str, Any] = {}
    for extra in arm_extras(arm.stage):
        fields.update(extra.defaults(arm, root))
    return fields


def _wiring(plan: StudyPlan, out: Path) -> dict[str, Any]:
    """The config fields every study stage gets from the plan, whatever its overrides say."""
    return {"out": str(out), "seed": plan.seed, "harness": plan.harness, "eval_suites": ""}


def _curve_points(cfg: Any, fields: dict[str, Any]) -> Any:
    """``cfg`` logging a learning curve of about ten points or more, however short the stage,
    unless the plan set ``logging_steps`` itself."""
    if "logging_steps" not in fields:
        cfg.logging_steps = max(1, min(cfg.logging_steps, cfg.max_steps // 10))
    return cfg


def phase_config(plan: StudyPlan, arm: Arm, root: Path, phase: StudyPhase) -> Any:
    """The trainer config of ``arm``'s second phase: the arm's defaults, its stage's plan fields
    but those ``phase.resets`` (its size), then ``phase.defaults``, then the plan's fields of the
    phase, then the wiring (from the first phase's model into the arm's ``model`` folder, and
    ``phase.wiring``'s fields); ``phase.finish`` settles it."""
    arm_dir = root / "arms" / arm.name
    fields = plan.stage_overrides.get(phase.name, {})
    first = {k: v for k, v in plan.stage_overrides.get(arm.stage, {}).items() if k not in phase.resets}
    wiring = {**_wiring(plan, arm_dir / "model"), "model": str(arm_dir / GENERAL_DIR)}
    if phase.wiring is not None:
        wiring.update(phase.wiring(plan, arm, root))
    values = {**_arm_defaults(arm, root), **first, **phase.defaults, **fields, **wiring}
    try:
        cfg = load_config(arm.stage, plan.train_config, values)
    except ConfigError as e:
        raise StudyError(f"arm {arm.name} ({phase.name} phase): {e}") from None
    if phase.finish is not None:
        phase.finish(cfg, fields)
    return _curve_points(cfg, fields)


def trained(root: Path, arm: Arm) -> bool:
    """Whether ``arm``'s training has finished (its summary and its final model are written; a
    pretrained base arm: its link to the base)."""
    arm_dir = root / "arms" / arm.name
    if (arm_dir / "model").is_symlink():
        return (arm_dir / TRAIN_FILE).is_file() and (arm_dir / "model" / "config.json").is_file()
    return (arm_dir / TRAIN_FILE).is_file() and (arm_dir / "model" / MANIFEST).is_file()


def link_pretrained_base(plan: StudyPlan, arm_dir: Path) -> dict[str, Any]:
    """The base arm of a study on a pretrained base: ``arms/base/model`` links to the fetched
    base folder (nothing is trained or copied), and its record names the base."""
    try:
        folder = resolve_base(plan.pretrained_base)
    except BaseError as e:
        raise StudyError(f"pretrained_base: {e}") from None
    if not isinstance(folder, Path):
        raise StudyError(f"pretrained_base {plan.pretrained_base}: name a fetched base or a model folder")
    arm_dir.mkdir(parents=True, exist_ok=True)
    link = arm_dir / "model"
    if link.is_symlink() or link.exists():
        link.unlink() if link.is_symlink() else shutil.rmtree(link)
    link.symlink_to(folder.resolve(), target_is_directory=True)
    return {
        "stage": "base",
        "out": str(link),
        "steps": 0,
        "seconds": 0.0,
        "total_seconds": 0.0,
        "tokens": 0,
        "tokens_per_s": 0.0,
        "log": [],
        "extra": {"pretrained": base_entry(plan.pretrained_base, folder)},
    }


def train_arm(plan: StudyPlan, arm: Arm, root: Path, say: Say, progress: bool) -> dict[str, Any]:
    """Train ``arm`` (or continue it from its last checkpoint); returns ``train.json``'s content.
    With a second phase of its stage in the plan (:meth:`~.plan.StudyPlan.second_phase`), it trains
    its first phase into ``arms/<arm>/general`` and goes on from there into ``arms/<arm>/model``. A
    stopped study continues the phase it was in."""
    arm_dir = root / "arms" / arm.name
    record = _read_json(arm_dir / TRAIN_FILE)
    if record and trained(root, arm):
        return record
    if arm.stage == "base" and plan.pretrained_base:
        record = link_pretrained_base(plan, arm_dir)
        say(f"arm {arm.name}: the pretrained base {plan.pretrained_base}, zero-shot (nothing trained)")
        _write_json(arm_dir / TRAIN_FILE, record)
        return record
    cfg = stage_config(plan, arm, root)
    source = arm.parent or plan.base_model or "scratch"
    what = f"train {arm.stage} from {source}"
    if phase := plan.second_phase(arm.stage):
        if phase.first is not None:
            phase.first(cfg)
        label = phase.label.format(parent=arm.parent, arm=arm.name)
        second = (phase.name, label, lambda: phase_config(plan, arm, root, phase))
        record = _train_two_phases(arm, cfg, what, second, arm_dir, say, progress)
    else:
        record = _train_phase(arm, cfg, what, say, progress)
    _write_json(arm_dir / TRAIN_FILE, record)
    return record


def _train_two_phases(
    arm: Arm, cfg: Any, what: str, second: tuple[str, str, Callable[[], Any]], arm_dir: Path, say: Say, progress: bool
) -> dict[str, Any]:
    """The arm's stage as planned into ``arms/<arm>/general``, then its second phase (``second``:
    name, what it does, its config) from there into ``arms/<arm>/model``; one record of both. A
    finished first phase is never trained again."""
    name, second_what, second_config = second
    first = _read_json(arm_dir / GENERAL_FILE)
    if not (first and (arm_dir / GENERAL_DIR / MANIFEST).is_file()):
        cfg.out = str(arm_dir / GENERAL_DIR)
        first = _train_phase(arm, cfg, what, say, progress)
        _write_json(arm_dir / GENERAL_FILE, first)
    return _join_phases(first, _train_phase(arm, second_config(), second_what, say, progress), name)


def _train_phase(arm: Arm, cfg: Any, what: str, say: Say, progress: bool) -> dict[str, Any]:
    """Run one trainer stage into ``cfg.out`` (continuing from its last checkpoint if there is
    one); returns the run's record without its in-training evaluation."""
    # lazy: run_study checks first that the trainer imports (it needs the train extra)
    from trainer.stages import run_stage

    out = Path(cfg.out)
    resume = last_checkpoint(out) is not None
    if out.exists() and not resume:
        shutil.rmtree(out)  # stopped before its first checkpoint: start the stage again
    say(f"arm {arm.name}: {what}, {cfg.max_steps} steps" + (" (resuming)" if resume else ""))
    try:
        result = run_stage(cfg.stage, cfg, resume=resume, progress=progress)
    except TrainError as e:
        raise StudyError(f"arm {arm.name} ({arm.stage}): {e}") from None
    if result.interrupted:
        raise StudyInterrupted(
            f"arm {arm.name}: training interrupted at step {result.steps}; checkpoint {result.checkpoint}"
        )
    return {k: v for k, v in result.to_dict().items() if k != "eval"}


def _join_phases(first: dict[str, Any], second: dict[str, Any], name: str = "copy") -> dict[str, Any]:
    """One record for a stage trained in two phases (the second called ``name``): the second's
    model and probe, steps, seconds and tokens summed, one learning curve with the second phase's
    steps after the first's.

    >>> _join_phases({"steps": 2, "seconds": 1.0, "log": [{"step": 2, "loss": 3.0}]},
    ...              {"steps": 1, "seconds": 2.0, "log": [{"step": 1, "loss": 1.0}]})["log"]
    [{'step': 2, 'loss': 3.0}, {'step': 3, 'loss': 1.0}]
    """
    offset = first.get("steps", 0)
    log = list(first.get("log", [])) + [
        {**row, "step": row["step"] + offset} if "step" in row else row for row in second.get("log", [])
    ]
    phases = [
        {"phase": phase, "steps": r.get("steps", 0), "seconds": _train_seconds(r), "out": r.get("out")}
        for phase, r in (("general", first), (name, second))
    ]
    for phase, r in zip(phases, (first, second), strict=True):
        extra = r.get("extra") or {}
        if extra.get("heldout_loss") is not None:  # a distillation phase that scored held-out rows
            keys = ("heldout_loss", "heldout_teacher_loss", "stopped_near_teacher_at")
            calls = ("heldout_call_match", "heldout_teacher_call_match")  # with heldout_calls=true
            phase.update({k: extra.get(k) for k in keys})
            phase.update({k: extra[k] for k in calls if extra.get(k) is not None})
    return {
        **second,
        "steps": offset + second.get("steps", 0),
        "total_seconds": round(_train_seconds(first) + _train_seconds(second), 3),
        "cpu_seconds": round(first.get("cpu_seconds", 0.0) + second.get("cpu_seconds", 0.0), 3),
        "tokens": first.get("tokens", 0) + second.get("tokens", 0),
        "log": log,
        "phases": phases,
    }


def _train_seconds(record: dict[str, Any]) -> float:
    """An arm's training time over every invocation, resumes included (a record written before
    ``total_seconds`` existed has only the last invocation's ``seconds``)."""
    return float(record.get("total_seconds") or record.get("seconds") or 0.0)
