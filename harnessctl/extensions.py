"""Extensions the core calls without naming them: modules listed under the entry-point group
``harnessctl.extensions`` are imported once, the first time a registry asks, and register what
they add with the registry they extend (a stage's config class: :func:`trainer.stage_configs.register_config`;
a distillation hook: :func:`trainer.distill.register_distill_hook`; a study phase or arm fields:
:func:`harnessctl.experiment.plan.register_phase`, :func:`harnessctl.experiment.plan.register_arm_extra`).

The package's own experimental wing (``harnessctl/experimental/``, see docs/train.md) is one;
without any, every registry holds only the core's own entries.

>>> load_extensions()
>>> ENTRY_POINT_GROUP
'harnessctl.extensions'
"""

from __future__ import annotations

import importlib.metadata

#: The entry-point group naming the modules that register extensions on import.
ENTRY_POINT_GROUP = "harnessctl.extensions"

_loaded_groups: set[str] = set()


def load_entry_point_group(group: str) -> None:
    """Import, once, the modules named under the entry-point group ``group`` (they register on
    import). Marked loaded first, so that a registry asked while one of them imports does not recurse."""
    if group in _loaded_groups:
        return
    _loaded_groups.add(group)
    for entry in importlib.metadata.entry_points(group=group):
        entry.load()


def group_loaded(group: str) -> bool:
    """Whether :func:`load_entry_point_group` has run for ``group``."""
    return group in _loaded_groups


def load_extensions() -> None:
    """Import, once, the modules named under :data:`ENTRY_POINT_GROUP` (they register on import)."""
    load_entry_point_group(ENTRY_POINT_GROUP)
