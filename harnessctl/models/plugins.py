"""The modules that register with the models layer on import (model-string kinds, corpus sources),
named under the entry-point group :data:`ENTRY_POINT_GROUP` and imported once, the first time a
registry is asked for a name it does not hold. A leaf: the registries import it, never the other
way round.

>>> load_entry_points(); loaded()
True
"""

from __future__ import annotations

from harnessctl.extensions import group_loaded, load_entry_point_group

#: The entry-point group that names the modules registering with this layer on import.
ENTRY_POINT_GROUP = "harnessctl.models"


def load_entry_points() -> None:
    """Import, once, the modules named under :data:`ENTRY_POINT_GROUP` (they register on import)."""
    load_entry_point_group(ENTRY_POINT_GROUP)


def loaded() -> bool:
    """Whether :func:`load_entry_points` has run."""
    return group_loaded(ENTRY_POINT_GROUP)
