"""What an operator did: plain records that go into variant manifests.

>>> rec = OpRecord("rename_tools", "tools", seed=7, params={"share": 1.0},
...                changes=[Change("tool:stock_check", "name", "check_stock", "count_units")])
>>> OpRecord.from_dict(rec.to_dict()) == rec
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Change:
    """One surface change. ``target`` names the element by key (``tool:<key>``,
    ``skill:<key>``, ``rule:<skill>/<rule>``, ``block:<key>``, ``constraint:<key>``,
    ``skill_loader``, ``hooks.retry``, ``hooks.message``, ``skills``, ``blocks``)."""

    target: str
    field: str
    before: Any
    after: Any


@dataclass
class OpRecord:
    """One operator application: its name, family, seed, parameters and the changes it made.

    Re-running operator ``operator`` with ``seed`` and ``params`` on the same input harness
    reproduces exactly these changes.
    """

    operator: str
    family: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OpRecord:
        d = dict(d)
        d["changes"] = [Change(**c) for c in d.get("changes", [])]
        return cls(**d)
