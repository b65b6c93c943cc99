"""The tool environment: where the runtime executes a tool's backend.

A harness binds each tool to a backend *name* (``sim.get_stock``); an environment turns that
name plus the model's arguments into a result. The simulator's :class:`~harnessctl.sim.world.World`
is one environment; a team plugs in its own (a staging API, recorded fixtures) by implementing
:class:`ToolEnvironment` — or by registering plain functions and using
:class:`FunctionEnvironment`.

Failures are exceptions the runtime understands; anything else a backend raises is treated as
a tool error too, so a broken backend never crashes an episode.

>>> env = FunctionEnvironment({"shop.price": lambda env, args: {"price": 9.9}})
>>> env.call("shop.price", {"product_id": "P001"}, tool_key="price", attempt=1, timeout_s=1.0)
{'price': 9.9}
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from harnessctl.errors import HarnessctlError
from harnessctl.harness.backends import get_backend


class ToolError(HarnessctlError):
    """The backend failed (a bad id, an upstream error). The message is shown to the model."""

    kind = "tool_error"


class ToolTimeout(ToolError):
    """The backend did not answer within the tool's ``timeout_s``."""

    kind = "timeout"


class MalformedResult(ToolError):
    """The backend answered with a payload that could not be read (cut-off or invalid JSON)."""

    kind = "tool_error"

    def __init__(self, message: str, payload: str = "") -> None:
        super().__init__(message)
        self.payload = payload


@runtime_checkable
class ToolEnvironment(Protocol):
    """Executes tool backends for one episode.

    ``tool_key`` is the stable key of the tool being called (fault plans and logs use it),
    ``attempt`` counts from 1 for retries of the same call, ``timeout_s`` is the tool's limit.
    Return a JSON-able result; raise :class:`ToolTimeout` / :class:`ToolError` on failure.
    """

    def call(self, backend: str, args: dict[str, Any], *, tool_key: str, attempt: int, timeout_s: float) -> Any: ...


BackendFn = Callable[[Any, dict[str, Any]], Any]


class FunctionEnvironment:
    """An environment over plain functions ``fn(env, args) -> result``, by backend name.

    Without a mapping it resolves names through the backend registry
    (:func:`harnessctl.harness.backends.get_backend`). Each call runs in a worker thread so a
    slow function is cut off at the tool's ``timeout_s`` (the thread is left to finish on its
    own; Python cannot kill it).

    >>> env = FunctionEnvironment()                                   # doctest: +SKIP
    >>> env.call("sim.get_stock", {"product_id": "P001"}, tool_key="stock_check",
    ...          attempt=1, timeout_s=3)                              # doctest: +SKIP
    """

    def __init__(self, functions: Mapping[str, BackendFn] | None = None, *, max_workers: int = 4) -> None:
        self._functions = dict(functions) if functions is not None else None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._max_workers = max_workers

    def resolve(self, backend: str) -> BackendFn:
        if self._functions is not None:
            fn = self._functions.get(backend)
            if fn is None:
                raise ToolError(f"no backend named {backend!r}")
            return fn

        try:
            return get_backend(backend)
        except KeyError as e:
            raise ToolError(str(e).strip("'\"")) from None

    def call(self, backend: str, args: dict[str, Any], *, tool_key: str, attempt: int, timeout_s: float) -> Any:
        fn = self.resolve(backend)
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self._max_workers, thread_name_prefix="tool")
        future = self._pool.submit(fn, self, args)
        try:
            return future.result(timeout=timeout_s if timeout_s and timeout_s > 0 else None)
        except concurrent.futures.TimeoutError:
            raise ToolTimeout(f"{backend} did not answer within {timeout_s:g} s") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def environment_for(case: Any) -> ToolEnvironment:
    """The environment a case runs in when the caller passes none: the case's own
    ``environment()`` (a simulator case builds a fresh world with its fault plan). The runtime
    never imports the simulator; a case that cannot make one needs ``env=`` passed explicitly.

    >>> environment_for(case)                          # doctest: +SKIP
    <harnessctl.sim.world.World object at ...>
    """
    make = getattr(case, "environment", None)
    if make is None:
        raise ToolError(f"case {getattr(case, 'id', case)!r} brings no tool environment: pass env= to run the episode")
    return make()
