"""How far constraints may move before the task stops being feasible, measured with the oracle.

A variant may lower ``max_reply_chars`` or the budgets, but never below what a perfect agent
needs: the oracle's shortest correct reply must still fit, and its tool calls and turns must
still fit the budgets. :func:`feasible_floors` measures this on a sample of simulator cases
(all intents, some with faults, so retries count):

- ``max_tool_calls`` and ``max_turns``: the most calls / model turns the oracle uses on any
  sample case under the source harness (exact for calls; an upper bound for turns, as the
  oracle can fold a skill load into a tool-call turn when turns run short);
- ``max_reply_chars``: the lowest limit at which the oracle still scores as well as under the
  source on every sample case (bisection: the oracle fits its reply to the limit, and a
  shorter reply drops optional words before facts, so feasibility is monotone in the limit);
- every other constraint keeps its declared ``min`` (the oracle does not think, and it drops
  emoji it is not allowed).

The result is cached per source harness (by content), so variants of one harness pay once.

>>> feasible_floors(load_harness("harnesses/livecommerce"))     # doctest: +SKIP
{'max_reply_chars': 74, 'max_tool_calls': 4, 'max_turns': 4}
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from harnessctl.harness.model import Harness
from harnessctl.harness.render import render_harness
from harnessctl.runtime.loop import run_episode
from harnessctl.sim.cases import INTENTS, generate_cases
from harnessctl.sim.oracle import OracleModel
from harnessctl.sim.scorer import score_episode

#: Sample used to measure floors: cases per intent, and the share of cases with a fault plan.
SAMPLE_PER_INTENT = 12
SAMPLE_FAULTS = 0.3
SAMPLE_SEED = 90_417
_TOLERANCE = 1e-9
_CACHE: dict[str, dict[str, float]] = {}


def harness_fingerprint(h: Harness) -> str:
    """A content hash of a harness (folder and file names left out)."""
    d = dataclasses.asdict(h)
    d.pop("root", None)
    d.pop("sources", None)
    text = json.dumps(d, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def feasible_floors(source: Harness, cases: list[Any] | None = None) -> dict[str, float]:
    """The lowest value of each budget constraint that keeps every sample case feasible.

    Only constraints the source declares are returned. ``cases`` replaces the default sample.
    """
    key = harness_fingerprint(source) + ("" if cases is None else ":" + ",".join(c.id for c in cases))
    cached = _CACHE.get(key)
    if cached is not None:
        return dict(cached)
    floors = _measure(source, cases if cases is not None else sample_cases())
    _CACHE[key] = floors
    return dict(floors)


def sample_cases() -> list[Any]:
    """The default measuring sample: every intent, some cases with faults."""
    return generate_cases(SAMPLE_PER_INTENT * len(INTENTS), seed=SAMPLE_SEED, faults=SAMPLE_FAULTS)


def _measure(source: Harness, cases: list[Any]) -> dict[str, float]:
    oracle = OracleModel()
    rendered = render_harness(source)
    baseline = []
    floors: dict[str, float] = {}
    most_calls = most_turns = 0
    for case in cases:
        rec = run_episode(source, case, oracle, rendered=rendered)
        baseline.append(score_episode(rec, case).total)
        most_calls = max(most_calls, len(rec.tool_steps))
        most_turns = max(most_turns, len(rec.model_steps))
    constraints = source.prompt.constraints
    if "max_tool_calls" in constraints:
        floors["max_tool_calls"] = min(
            max(most_calls, constraints["max_tool_calls"].min), constraints["max_tool_calls"].value
        )
    if "max_turns" in constraints:
        floors["max_turns"] = min(max(most_turns, constraints["max_turns"].min), constraints["max_turns"].value)
    if "max_reply_chars" in constraints:
        c = constraints["max_reply_chars"]
        # Hardest cases first: a failing probe usually stops at its first case.
        order = sorted(range(len(cases)), key=lambda i: -len(cases[i].expect.facts))

        def feasible(limit: int) -> bool:
            probe = source.copy()
            probe.prompt.constraints["max_reply_chars"].value = limit
            probe_rendered = render_harness(probe)
            for i in order:
                rec = run_episode(probe, cases[i], oracle, rendered=probe_rendered)
                if score_episode(rec, cases[i]).total < baseline[i] - _TOLERANCE:
                    return False
            return True

        lo, hi = int(c.min), int(c.value)
        if feasible(lo):
            hi = lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if feasible(mid):
                hi = mid
            else:
                lo = mid
        floors["max_reply_chars"] = hi
    return floors
