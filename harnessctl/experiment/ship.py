"""Ship a finished arm of a study as a model inside the package (``harnessctl model ship``).

The arm's final model (``arms/<arm>/model/``, a trainer output folder) is reduced to what
inference needs and copied to ``harnessctl/models/data/<name>/`` by
:func:`harnessctl.models.shipped.install_model`, with a ``SHIPPED.json`` that records the study,
the arm, its scores (from the study's ``results.json``, else the arm's ``arm.json``) and the
command that reproduces the study from scratch (rebuilt from ``plan.json``).

>>> ship_arm("experiments/full", "hat")                       # doctest: +SKIP
ShippedModel(name='hat', ...)
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

from harnessctl.models.base import ModelError
from harnessctl.models.shipped import ShippedModel, check_name, install_model

from .arms import ARM_FILE, PLAN_FILE, StudyError
from .plan import PlanError, StudyPlan, plan_options
from .runner import RESULTS_JSON


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise StudyError(f"{path}: not readable JSON ({e}); rerun the study command to rewrite it") from None
    return data if isinstance(data, dict) else None


def reproduce_command(plan: dict[str, Any], study_id: str) -> str:
    """The ``harnessctl experiment hat`` command that runs the study ``plan`` from scratch: its
    preset, id, seed and ablations, and a ``--set`` for every field that differs from the preset.

    >>> from harnessctl.experiment.plan import full_plan, quick_plan
    >>> reproduce_command(quick_plan().to_dict(), "quick")
    'harnessctl experiment hat --quick --id quick'
    >>> reproduce_command({**full_plan().to_dict(), "eval_limit": 100}, "full")
    'harnessctl experiment hat --id full --set eval_limit=100'
    """
    options = plan_options(plan)
    preset = (
        options[: {"--quick": 1, "--base": 2}.get(options[0], 0)] if options else []
    )  # the preset first, then the id
    args = ["harnessctl", "experiment", "hat", *preset, "--id", study_id, *options[len(preset) :]]
    return " ".join(shlex.quote(a) for a in args)


def ship_arm(
    study: str | Path, arm: str, *, as_name: str | None = None, force: bool = False, data_root: Path | None = None
) -> ShippedModel:
    """Ship the finished arm ``arm`` of the study folder ``study`` as ``shipped:<as_name>`` (default:
    the arm's name). Raises :class:`StudyError` for a folder that is not a study or an arm that
    is not finished, :class:`~harnessctl.models.base.ModelError` for a name already shipped
    (without ``force``) or a model folder that is not complete."""
    root = Path(study)
    name = check_name(as_name or arm)
    plan = _read(root / PLAN_FILE)
    if plan is None:
        raise StudyError(
            f"--study {study}: not a study folder (no {PLAN_FILE}); pass the folder `harnessctl experiment hat` "
            "wrote, e.g. experiments/full"
        )
    arm_dir = root / "arms" / arm
    record = _read(arm_dir / ARM_FILE)
    if record is None or record.get("status") != "done":
        finished = sorted(p.parent.name for p in (root / "arms").glob(f"*/{ARM_FILE}"))
        try:
            known = [a.name for a in StudyPlan.from_dict(plan).arms()]
        except PlanError as e:
            raise StudyError(f"{root / PLAN_FILE}: {e}") from None
        what = "is not an arm of this study" if arm not in known else f"is not finished (no arms/{arm}/{ARM_FILE})"
        raise StudyError(
            f"--arm {arm}: {what}; finished arms: {', '.join(finished) or 'none'}. "
            f"Run or continue the study with `{reproduce_command(plan, root.name)}`"
        )
    results = _read(root / RESULTS_JSON) or {}
    scores = (results.get("scores") or {}).get(arm)
    scores_from = RESULTS_JSON
    if scores is None:
        metrics = record.get("metrics") or {}
        scores, scores_from = {**metrics.get("scores", {}), **metrics.get("slices", {})}, ARM_FILE
    info = {
        "study": root.name,
        "arm": arm,
        "label": record.get("label", arm),
        "stage": record.get("stage"),
        "parent": record.get("parent"),
        "preset": plan.get("preset"),
        "eval_cases_per_suite": results.get("eval_cases", plan.get("eval_limit")),
        "ifeval_prompts": results.get("ifeval_prompts", results.get("eval_cases", plan.get("eval_limit"))),
        "scores": scores,
        "scores_from": scores_from,
        "latency": (record.get("metrics") or {}).get("served_latency") or (record.get("metrics") or {}).get("latency"),
        "reproduce": reproduce_command(plan, root.name),
        "ship": f"harnessctl model ship --study experiments/{root.name} --arm {arm} --as {name}",
        "trained": record.get("finished"),
        "shipped": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        return install_model(arm_dir / "model", name, info, data_root=data_root, force=force)
    except ModelError as e:
        raise StudyError(str(e)) from None
