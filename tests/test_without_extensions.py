"""The core works with no extension installed (no module under the entry-point group
``harnessctl.extensions``, so the experimental wing registers nothing): the product's presets
plan as before but for the wing's phases, the base and distill configs have only the core's fields, and a
recorded plan that names a wing phase is refused with what to do, not a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# entry points of the group read as none, before anything of the package is imported
NO_EXTENSIONS = """
import importlib.metadata as metadata
entry_points = metadata.entry_points
metadata.entry_points = lambda **kw: [] if kw.get("group") == "harnessctl.extensions" else entry_points(**kw)
"""


def run(code: str) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", NO_EXTENSIONS + code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout)


def test_without_extensions_the_presets_plan_their_core_stages_and_a_wing_plan_says_what_to_do():
    out = run(
        """
import json, sys
from harnessctl.experiment.plan import PlanError, StudyPlan, apply_overrides, full_plan, plan_stages, quick_plan
from trainer.config import ConfigError
from trainer.stage_configs import load_config

full = full_plan()
recorded = full.to_dict()
recorded["stage_overrides"]["copy"] = {"max_steps": 2500}
errors = []
for attempt in (lambda: StudyPlan.from_dict(recorded), lambda: apply_overrides(quick_plan(), ["anchor.max_steps=20"])):
    try:
        attempt()
    except PlanError as e:
        errors.append(str(e))
for stage, field in (("distill", "anchor_teacher"), ("base", "copy_share")):
    try:
        load_config(stage, "tiny-cpu", {field: "1"})
    except ConfigError as e:
        errors.append(str(e))
print(json.dumps({
    "stages": plan_stages(),
    "full": list(full.stage_overrides),
    "phases": [p.name for p in full.phases()],
    "errors": errors,
    "wing": "harnessctl.experimental" in sys.modules,
}))
"""
    )
    assert out["stages"] == ["base", "sft", "distill", "rl"] and out["full"] == out["stages"]
    assert out["phases"] == [] and not out["wing"]
    recorded, overridden, distill, base = out["errors"]
    assert "unknown stage 'copy'" in recorded and "pip install -e ." in recorded
    assert "'anchor' is not a stage" in overridden and "harnessctl.extensions" in overridden
    assert "--set anchor_teacher: unknown distill field" in distill
    assert "--set copy_share: unknown base field" in base
