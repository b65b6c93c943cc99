"""One live turn: a viewer's message answered by a model under a harness, in the simulator, scored.

What ``harnessctl run --query`` shows. The query becomes a case (the simulator reads the intent
and what the words pin down), the runtime answers it through the model, and the scorer grades
the episode by key.

>>> turn = live_turn("how much is the one on screen?", product_id="P001",
...                  harness_path="harnesses/livecommerce", model="oracle")     # doctest: +SKIP
>>> turn.record.skills_loaded, turn.score.total                               # doctest: +SKIP
(['price_promo'], 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harnessctl.harness import load_harness
from harnessctl.models.base import GenerationSettings, ModelBackend
from harnessctl.models.registry import resolve_model
from harnessctl.runtime.loop import run_episode
from harnessctl.sim.catalog import load_catalog
from harnessctl.sim.querylog import case_from_query
from harnessctl.sim.scorer import score_episode


@dataclass
class LiveTurn:
    """The case built from the query, what happened, and its score."""

    case: Any  # harnessctl.sim.case.Case
    record: Any  # harnessctl.runtime.record.EpisodeRecord
    score: Any  # harnessctl.sim.scorer.ScoreBreakdown

    @property
    def model_error(self) -> str | None:
        """Why the model failed (after its retries), or None."""
        if self.record.termination.value != "model_error":
            return None
        errors = [s.error for s in self.record.model_steps if s.error]
        return errors[-1] if errors else "the model failed"

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case.to_dict(), "record": self.record.to_dict(), "score": self.score.to_dict()}


def live_turn(
    query: str,
    *,
    harness_path: str | Path,
    model: str | ModelBackend = "oracle",
    product_id: str | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
    seed: int = 0,
    settings: GenerationSettings | None = None,
    catalog: Any = None,
) -> LiveTurn:
    """Answer ``query`` (with ``product_id`` on screen) and score the answer.

    ``model`` is a model string (see :func:`harnessctl.models.registry.resolve_model`) or a
    backend. Raises ``ModelError`` for a model string that cannot be resolved, ``KeyError`` for
    an unknown product, ``ValueError`` for an empty query; a model that fails while answering
    is recorded (``termination == model_error``), not raised.
    """
    if not query or not query.strip():
        raise ValueError("the query is empty: pass the viewer's message with --query")
    harness = load_harness(harness_path)
    catalog = catalog if catalog is not None else load_catalog()
    case = replace(case_from_query(query.strip(), product_id, catalog), seed=seed)
    backend = resolve_model(model, api_base=api_base, api_key_env=api_key_env) if isinstance(model, str) else model
    record = run_episode(harness, case, backend, settings=settings or GenerationSettings(seed=seed))
    return LiveTurn(case=case, record=record, score=score_episode(record, case))
