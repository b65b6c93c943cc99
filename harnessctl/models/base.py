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
import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harnessctl.errors import HarnessctlError
from harnessctl.models.types import ModelResponse


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings; part of the eval cache key."""

    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    seed: int | None = None
    timeout_s: float = 60.0
    extra: dict[str, Any] = field(default_factory=dict)


class ModelError(HarnessctlError):
    """The backend could not produce a response (after its own retries)."""


@runtime_checkable
class ModelBackend(Protocol):
    """What the runtime calls. ``for_episode`` lets a backend bind to the case it answers and
    the harness it answers under.

    A backend declares its capabilities as attributes; one that declares nothing (any object of
    this shape) has the defaults below, read through :func:`reads_answer_key`, :func:`cacheable`
    and :func:`cache_identity`."""

    name: str
    #: The runtime hands it the full case, answer key included (the oracle and wrappers around
    #: it); every other backend gets the viewer's view (see :func:`bind_model`).
    reads_answer_key: bool = False
    #: The eval call cache may keep its replies; a reference policy that is cheaper to run than to
    #: look up (the oracle) declares ``False``.
    cacheable: bool = True
    #: What the eval call cache calls its replies when its name alone does not say what decides
    #: them (the harness-blind reference: the surface it memorised); None: its name.
    cache_identity: str | None = None

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse: ...

    def for_episode(self, case: Any, harness: Any) -> ModelBackend: ...


async def agenerate(
    backend: ModelBackend, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
) -> ModelResponse:
    """Async generate: the backend's own ``agenerate`` when it has one, else a worker thread."""
    native = getattr(backend, "agenerate", None)
    if native is not None:
        return await native(messages, tools, settings)
    return await asyncio.to_thread(backend.generate, messages, tools, settings)


#: Case fields that give the answer away: what a correct reply needs, the intent and slots the
#: oracle plans from, the fault plan and the tags. A policy never sees them (:func:`viewer_view`).
ANSWER_KEY_FIELDS = ("expect", "intent", "slots", "faults", "tags")


def viewer_view(case: Any) -> Any:
    """A copy of ``case`` with its answer key emptied: what a policy may know about the case
    (its id, the viewer's words and on-screen context, its seed and variant).

    >>> from harnessctl.sim.case import Case, Expectation
    >>> viewer_view(Case(id="c1", intent="price", query="how much?", expect=Expectation(skill="price_promo"))).expect.skill is None
    True
    """
    if case is None:
        return None
    if dataclasses.is_dataclass(case) and not isinstance(case, type):
        names = {f.name for f in dataclasses.fields(case)}
    else:
        names = set(getattr(case, "__dict__", {}))
    emptied = {f: type(getattr(case, f))() for f in ANSWER_KEY_FIELDS if f in names and getattr(case, f) is not None}
    if not emptied:
        return case
    if dataclasses.is_dataclass(case) and not isinstance(case, type):
        return dataclasses.replace(case, **emptied)
    view = copy.copy(case)
    for name, value in emptied.items():
        setattr(view, name, value)
    return view


def reads_answer_key(model: Any) -> bool:
    """What ``model`` declares as :attr:`ModelBackend.reads_answer_key` (False when it declares nothing).

    >>> reads_answer_key(object())
    False
    """
    return bool(getattr(model, "reads_answer_key", ModelBackend.reads_answer_key))


def cacheable(model: Any) -> bool:
    """What ``model`` declares as :attr:`ModelBackend.cacheable` (True when it declares nothing).

    >>> cacheable(object())
    True
    """
    return bool(getattr(model, "cacheable", ModelBackend.cacheable))


def bind_model(model: Any, case: Any, harness: Any) -> Any:
    """The backend that answers ``case``: ``model.for_episode(...)`` when it has one, with the full
    case only for a backend that declares ``reads_answer_key = True`` (the oracle and wrappers
    around it); every other backend gets :func:`viewer_view` of the case.

    >>> policy = bind_model(OracleModel(), case, harness)     # doctest: +SKIP
    """
    bind = getattr(model, "for_episode", None)
    if bind is None:
        return model
    return bind(case if reads_answer_key(model) else viewer_view(case), harness)


def cache_identity(model: Any) -> str | None:
    """What ``model`` declares as :attr:`ModelBackend.cache_identity` (None when it declares nothing).

    >>> cache_identity(object()) is None
    True
    """
    return getattr(model, "cache_identity", ModelBackend.cache_identity)
