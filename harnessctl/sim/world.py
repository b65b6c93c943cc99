"""The world of one episode: the catalog behind the tools, with faults injected per call.

Faults come from the case's plan (``case.faults["stock_check"] = ["timeout", "ok"]``: the first
call to that tool times out, the second works) or, where the plan says nothing, at random at
``fault_rates`` — seeded by ``(seed, case id, tool, call number)``, so an episode is replayable.

Fault kinds (:data:`~harnessctl.sim.task.FAULT_KINDS`): ``error`` (upstream failure),
``timeout``, ``malformed`` (a cut-off payload that cannot be read: the runtime sees a tool error),
``partial`` (a readable result with fields missing and lists cut short, the missing fields named
under ``"incomplete"``; see :func:`partial_result`) and ``empty`` (nothing back).

>>> w = World(fault_rates=0.0)
>>> w.call("sim.get_product", {"product_id": "P001"}, tool_key="product_details")["name"]
'Glow Serum'
>>> from harnessctl.sim.case import Case
>>> w = World(case=Case(id="c", intent="stock", query="?", faults={"stock_check": ["timeout"]}))
>>> w.call("sim.get_stock", {"product_id": "P001"}, tool_key="stock_check")
Traceback (most recent call last):
...
harnessctl.runtime.environment.ToolTimeout: sim.get_stock did not answer within 3 s
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from harnessctl.harness.backends import get_backend
from harnessctl.runtime.environment import MalformedResult, ToolError, ToolTimeout
from harnessctl.sim.catalog import Catalog, load_catalog
from harnessctl.sim.task import FAULT_KINDS

#: Keys a partial result always keeps: what the result is about, not what it says.
IDENTITY_KEYS = ("id", "product_id", "order_id", "name", "region", "code")


class World:
    """A :class:`~harnessctl.runtime.environment.ToolEnvironment` over the simulated shop.

    ``fault_rates`` is a probability per call (split evenly over the fault kinds) or a dict
    ``{kind: probability}``. ``calls`` logs every call with the fault applied.
    """

    def __init__(
        self,
        catalog: Catalog | None = None,
        case: Any = None,
        fault_rates: float | dict[str, float] | None = None,
        seed: int = 0,
    ) -> None:
        self.catalog = catalog if catalog is not None else load_catalog()
        self.case = case
        self.seed = seed
        self.fault_rates = _rates(fault_rates)
        self.calls: list[dict[str, Any]] = []
        self._count: Counter[str] = Counter()

    @property
    def viewer_handle(self) -> str:
        viewer = getattr(getattr(self.case, "context", None), "viewer", None) or {}
        return str(viewer.get("handle") or "viewer")

    def fault_for(self, tool_key: str) -> str:
        """The fault the next call to ``tool_key`` gets (advances the call counter)."""
        n = self._count[tool_key]
        self._count[tool_key] += 1
        plan = (getattr(self.case, "faults", None) or {}).get(tool_key) or []
        if n < len(plan):
            return str(plan[n])
        if not self.fault_rates:
            return "ok"
        case_id = getattr(self.case, "id", "") if self.case is not None else ""
        r = random.Random(f"{self.seed}|{case_id}|{tool_key}|{n}").random()
        acc = 0.0
        for kind, p in self.fault_rates.items():
            acc += p
            if r < acc:
                return kind
        return "ok"

    def call(
        self,
        backend: str,
        args: dict[str, Any],
        *,
        tool_key: str | None = None,
        attempt: int = 1,
        timeout_s: float | None = 3.0,
    ) -> Any:
        """Run ``backend`` on ``args`` with this call's fault applied."""
        key = tool_key or backend
        fault = self.fault_for(key)
        self.calls.append({"tool": key, "backend": backend, "args": dict(args), "attempt": attempt, "fault": fault})
        if fault == "error":
            raise ToolError(f"{backend}: upstream service error (503)")
        if fault == "timeout":
            raise ToolTimeout(f"{backend} did not answer within {timeout_s or 0:g} s")
        try:
            fn = get_backend(backend)
        except KeyError as e:
            raise ToolError(str(e.args[0])) from None
        result = fn(self, args)
        if fault == "malformed":
            text = json.dumps(result)
            raise MalformedResult(
                f"{backend}: malformed payload (response cut off)", payload=text[: max(1, len(text) // 2)]
            )
        if fault == "empty":
            return {}
        if fault == "partial":
            return partial_result(result)
        return result


def partial_result(result: Any) -> Any:
    """What a ``partial`` fault leaves of a tool result: the identity keys, then every other
    field (the second, fourth, ... are dropped), lists among the kept fields cut to their first
    half; the dropped and cut fields are named in ``"incomplete"``.

    >>> partial_result({"region": "north", "days_min": 2, "days_max": 4, "fee": 4.99, "free_over": 49.0})
    {'region': 'north', 'days_min': 2, 'fee': 4.99, 'incomplete': ['days_max', 'free_over']}
    >>> partial_result({"product_id": "P1", "variants": [{"name": "S", "stock": 2}, {"name": "M", "stock": 0}]})
    {'product_id': 'P1', 'variants': [{'name': 'S', 'stock': 2}], 'incomplete': ['variants']}
    """
    if not isinstance(result, dict):
        if isinstance(result, list) and len(result) > 1:
            return result[: len(result) // 2]
        return result
    out: dict[str, Any] = {}
    missing: list[str] = []
    rest = [k for k in result if k not in IDENTITY_KEYS]
    for k, v in result.items():
        if k in IDENTITY_KEYS:
            out[k] = v
            continue
        if rest.index(k) % 2 == 1:
            missing.append(k)
            continue
        if isinstance(v, list) and len(v) > 1:
            out[k] = v[: len(v) // 2]
            missing.append(k)
        else:
            out[k] = v
    out["incomplete"] = missing
    return out


def _rates(rates: float | dict[str, float] | None) -> dict[str, float]:
    if rates is None:
        return {}
    if isinstance(rates, (int, float)):
        if not 0 <= rates <= 1:
            raise ValueError(f"fault rate must be between 0 and 1, got {rates}")
        return {k: float(rates) / len(FAULT_KINDS) for k in FAULT_KINDS} if rates else {}
    unknown = set(rates) - set(FAULT_KINDS)
    if unknown:
        raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; kinds are {', '.join(FAULT_KINDS)}")
    if sum(rates.values()) > 1:
        raise ValueError("fault rates add up to more than 1")
    return {k: float(v) for k, v in rates.items() if v}
