"""One interface for every model backend: served (litellm), embedded (transformers), oracle.

A backend turns ``(messages, tools, settings)`` into a :class:`ModelResponse`. The runtime only
ever sees this seam, so a trainer can drive the same agent loop with its own generate function
(and get token ids back) by passing any object with this shape.

>>> class Echo:
...     name = "echo"
...     def generate(self, messages, tools, settings):
...         return ModelResponse(content=messages[-1]["content"])
...     def for_episode(self, case, harness):
...         return self
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # the runtime package imports this module: no import cycle at run time
    from harnessctl.runtime.record import ModelResponse


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings; part of the eval cache key."""

    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    seed: int | None = None
    timeout_s: float = 60.0
    extra: dict[str, Any] = field(default_factory=dict)


class ModelError(Exception):
    """The backend could not produce a response (after its own retries)."""


@runtime_checkable
class ModelBackend(Protocol):
    """What the runtime calls. ``for_episode`` lets a backend bind to the case it answers and
    the harness it answers under (only the oracle uses them; every other backend returns ``self``)."""

    name: str

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse: ...

    def for_episode(self, case: Any, harness: Any) -> "ModelBackend": ...


async def agenerate(
    backend: ModelBackend, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
) -> ModelResponse:
    """Async generate: the backend's own ``agenerate`` when it has one, else a worker thread."""
    native = getattr(backend, "agenerate", None)
    if native is not None:
        return await native(messages, tools, settings)
    return await asyncio.to_thread(backend.generate, messages, tools, settings)
