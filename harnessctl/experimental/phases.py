"""The study phases of the wing: stage 0's copy phase and OPD's anchor phase, with the held-out
rows every distillation arm scores. Each is plain data the core's study runs
(:class:`~harnessctl.experiment.plan.StudyPhase`, :class:`~harnessctl.experiment.plan.ArmExtra`);
the full preset has both phases. Why each exists: docs/studies/copying.md (copy) and
docs/studies/copyphase.md (anchor).

>>> COPY.stage, ANCHOR.stage, COPY.presets["full"]["max_steps"]
('base', 'distill', 2500)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessctl.experiment.plan import ARMS, Arm, ArmExtra, StudyPhase, StudyPlan

from .heldout import check_seconds


def _copy_rows(cfg: Any, fields: dict[str, Any]) -> None:
    """One pass of rows unless the plan's copy phase sets ``rows`` (at least 10, stage 0's least)."""
    if "rows" not in fields:
        cfg.rows = max(10, cfg.max_steps * cfg.per_device_batch_size * cfg.gradient_accumulation_steps)


def _no_first_probe(cfg: Any) -> None:
    """The copy probe measures the model the arm ends with: none after the first phase."""
    cfg.copy_probe = 0


#: Stage 0 goes on from the general corpus on rows half of which copy a fresh code, at a steady
#: learning rate (copying forms in a phase change a decayed schedule or diluted rows stop short
#: of: docs/studies/copying.md), padding-free (docs/studies/compute.md#padding-free-batches).
COPY = StudyPhase(
    name="copy",
    stage="base",
    label="copy phase: continue base on copy rows",
    defaults={"copy_share": 0.5, "lr_scheduler_type": "constant_with_warmup", "copy_probe": 60, "padding_free": True},
    resets=("max_steps", "rows"),
    presets={"full": {"max_steps": 2500}},
    finish=_copy_rows,
    first=_no_first_probe,
)


def _anchor_wiring(plan: StudyPlan, arm: Arm, root: Path) -> dict[str, Any]:
    """The SFT parent is the teacher, its own trajectories (cut at every step) the prompts."""
    parent = ARMS[str(arm.parent)]
    return {
        "teacher": str(root / "arms" / parent.name / "model"),
        "prompts": str(root / "data" / str(parent.data) / "train.jsonl"),
    }


def _anchor_normal(fields: dict[str, str], stages: dict[str, Any]) -> dict[str, str]:
    """A plan from before the anchor phase stopped on held-out rows ran its ``max_steps``: its
    ``stop_near_teacher`` is distill's, and the trainer's default is 0 (off).

    >>> _anchor_normal({"max_steps": "20"}, {})
    {'max_steps': '20', 'stop_near_teacher': '0'}
    """
    if "stop_near_teacher" in fields:
        return fields
    distill = stages.get("distill") if isinstance(stages.get("distill"), dict) else {}
    return {**fields, "stop_near_teacher": distill.get("stop_near_teacher", "0")}


#: After OPD to the base on general prompts, distillation back toward the SFT parent on its own
#: trajectories' steps (OPD alone stopped the product lookups: docs/studies/copyphase.md); the full
#: preset stops it once the parent's held-out loss is back within 5 %, 60 steps at most.
ANCHOR = StudyPhase(
    name="anchor",
    stage="distill",
    label="anchor phase: distill back toward {parent} on its trajectories' steps",
    defaults={"max_steps": 20, "n_prompts": 240, "prompt_turn": "any"},
    resets=("max_steps", "n_prompts"),
    presets={"full": {"max_steps": 60, "stop_near_teacher": 0.05}},
    wiring=_anchor_wiring,
    probe_sets=("anchor.stop_near_teacher=0", "anchor.heldout="),
    normal=_anchor_normal,
)


def _heldout_rows(arm: Arm, root: Path) -> dict[str, Any]:
    """A distillation arm scores its SFT parent's held-out rows (``heldout_loss``: what distilling
    costs the agent)."""
    if arm.parent and ARMS[arm.parent].data:
        return {"heldout": str(root / "data" / str(ARMS[arm.parent].data))}
    return {}


#: Every distillation arm's held-out rows, off in an estimate's probe (timed by ``check_seconds``).
HELDOUT = ArmExtra(
    stage="distill", defaults=_heldout_rows, probe_sets=("distill.heldout=",), check_seconds=check_seconds
)
