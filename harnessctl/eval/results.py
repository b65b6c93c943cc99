"""One evaluated case: the line a run appends to ``records.jsonl`` as each case ends.

It carries the identity of the case (suite, id, repeat), how it is grouped (intent, operator
families), the score (0-1 total, components, failures), the latency and the full episode record
for drill-down, the judge and the loop.

>>> r = CaseResult(suite="livestream", case_id="c1", score=1.0, passed=True)
>>> CaseResult.from_dict(r.to_dict()) == r
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from harnessctl.sim.task import PASS_THRESHOLD  # noqa: F401 - used where a scorer gives no pass/fail of its own

RESULT_SCHEMA_VERSION = 1


@dataclass
class CaseResult:
    suite: str
    case_id: str
    repeat: int = 0
    intent: str = ""
    #: Operator families / perturbations that shaped the case (``op:tools``, ``fault:timeout``,
    #: ``perturb:typo``, ``history:v1``...); empty for plain cases.
    families: list[str] = field(default_factory=list)
    variant: str | None = None
    score: float = 0.0  # 0..1
    passed: bool = False
    components: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    latency_s: float = 0.0
    #: Every model call of the episode was answered from the cache (latency not representative).
    cached: bool = False
    #: Model calls the case made, and how many of them the cache answered.
    model_calls: int = 0
    cache_hits: int = 0
    termination: str = ""
    error: str | None = None  # the case could not run (timeout, model error after retries...)
    record: dict[str, Any] | None = None  # EpisodeRecord.to_dict()
    #: Suite-specific details (IFEval: prompt/instruction strict and loose verdicts).
    details: dict[str, Any] = field(default_factory=dict)
    schema_version: int = RESULT_SCHEMA_VERSION

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity inside a run: one line per (suite, case id, repeat)."""
        return (self.suite, self.case_id, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        # Shallow: every field is already plain data (the record is a dict), so asdict's deep
        # copy would only cost time on each of thousands of appends.
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CaseResult:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})
