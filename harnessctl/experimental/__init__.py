"""The experimental wing: study-only code, fenced off from the product. It may change or go
without notice; the core never imports it and it uses only the core's public names (both
tested in tests/test_layers.py).

It registers, on import (the package names it under the entry-point group
``harnessctl.extensions``, which the core's registries load: :mod:`harnessctl.extensions`):

- :mod:`.config` — the knobs only these studies use: stage 0's ``copy_share``, ``copy_mix``,
  ``copy_probe`` and stage 2's ``anchor_teacher``, ``anchor_prompts``, ``anchor_share``,
  ``heldout*``, ``stop_near_teacher``, as the ``base`` and ``distill`` configs;
- :mod:`.copy_rows` — the copy corpus of stage 0 (copy and pick rows) and the copy probe after
  it, a stage-0 hook;
- :mod:`.two_teachers` — two-teacher on-policy distillation (``anchor_teacher``), a distillation hook;
- :mod:`.heldout` — held-out agent loss while distilling and the ``stop_near_teacher`` rule, a
  distillation hook, and what its checks add to a study's estimate;
- :mod:`.phases` — the HAT study's copy phase (stage 0) and anchor phase (OPD), both in the full
  preset, and the held-out rows every distillation arm scores.

>>> from harnessctl.experiment.plan import plan_stages
>>> plan_stages()
('base', 'copy', 'sft', 'distill', 'anchor', 'rl')
"""

from __future__ import annotations

from harnessctl.experiment.plan import register_arm_extra, register_phase
from trainer.base import register_base_hook
from trainer.distill import register_distill_hook
from trainer.stage_configs import register_config

from .config import BaseStudyConfig, DistillStudyConfig
from .copy_rows import CopyRows
from .heldout import HeldoutRows
from .phases import ANCHOR, COPY, HELDOUT
from .two_teachers import TwoTeachers

register_config("base", BaseStudyConfig)
register_base_hook(CopyRows())
register_config("distill", DistillStudyConfig)
# two teachers first: it names the agent's teacher the held-out rows compare against
register_distill_hook(TwoTeachers())
register_distill_hook(HeldoutRows())
register_phase(COPY)
register_phase(ANCHOR)
register_arm_extra(HELDOUT)
