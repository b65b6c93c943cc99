"""The tool-backend registry: a tool's ``backend`` field names a function registered here.

A harness file only *names* a backend; it never says which module to import. Backends are
registered by the layer that defines them, on import (the simulator's, :mod:`harnessctl.sim.backends`,
when the simulator is imported), and by a user's own modules listed, comma-separated, in the
environment variable ``HARNESSCTL_BACKEND_MODULES``. A package that registers backends is also
named under the ``harnessctl.backends`` entry-point group of the package metadata
(``pyproject.toml``); the registry imports those on first use, so that a backend name resolves
whatever has been imported before.

>>> @register_backend("shop.get_price")              # doctest: +SKIP
... def get_price(world, args):
...     return {"price": world.price(args["product_id"])}
>>> "shop.get_price" in known_backends()            # doctest: +SKIP
True
>>> get_backend("shop.get_price") is get_price      # doctest: +SKIP
True
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from .errors import HarnessError, Issue

#: The entry-point group naming the modules that register backends on import (imported on first use).
ENTRY_POINT_GROUP = "harnessctl.backends"
#: Environment variable naming a user's own backend modules, comma-separated.
BACKEND_MODULES_ENV = "HARNESSCTL_BACKEND_MODULES"


class Backend(Protocol):
    """A tool implementation: the world it acts on and the call's arguments -> a JSON-able result."""

    def __call__(self, world: Any, args: dict[str, Any]) -> Any: ...


B = TypeVar("B", bound=Callable[..., Any])

_REGISTRY: dict[str, Callable[..., Any]] = {}
_imported: set[str] = set()


def register_backend(name: str) -> Callable[[B], B]:
    """Register the decorated function as the backend called ``name``.

    >>> @register_backend("sim.get_stock")           # doctest: +SKIP
    ... def get_stock(world, args): ...

    Registering a *different* function under a name already taken is an error (two modules
    fighting over one name); registering the same function again (a module reload) is not.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("a backend name is a non-empty string such as 'sim.get_product'")

    def decorate(fn: B) -> B:
        current = _REGISTRY.get(name)
        if current is not None and not _same_function(current, fn):
            raise ValueError(f"backend {name!r} is already registered by {current.__module__}.{current.__qualname__}")
        _REGISTRY[name] = fn
        return fn

    return decorate


def get_backend(name: str) -> Callable[..., Any]:
    """The function registered as ``name``; :class:`KeyError` naming the known ones if none is.

    >>> get_backend("sim.get_product")({"catalog": ...}, {"product_id": "P012"})   # doctest: +SKIP
    """
    _import_backend_modules()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"no tool backend named {name!r} (known: {known})") from None


def known_backends() -> set[str]:
    """Names of every registered backend, after importing the backend modules.

    >>> sorted(known_backends())[:2]                  # doctest: +SKIP
    ['sim.estimate_shipping', 'sim.get_order_status']
    """
    _import_backend_modules()
    return set(_REGISTRY)


@contextmanager
def backends_registered(backends: Mapping[str, Callable[..., Any]]) -> Iterator[None]:
    """Register ``backends`` (name -> function) inside a ``with`` block only, e.g. in a test.

    Names already registered keep their function; the registry is restored on exit.

    >>> with backends_registered({"shop.get_price": lambda world, args: 9.99}):   # doctest: +SKIP
    ...     validate_harness_dir("harnesses/shop")
    """
    _import_backend_modules()
    added = [name for name in backends if name not in _REGISTRY]
    _REGISTRY.update({name: backends[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            _REGISTRY.pop(name, None)


def backend_modules() -> list[str]:
    """The modules that register backends: those the package metadata names under
    :data:`ENTRY_POINT_GROUP`, then the user's from the environment."""
    extra = [m.strip() for m in os.environ.get(BACKEND_MODULES_ENV, "").split(",") if m.strip()]
    return [*_entry_point_modules(), *extra]


@functools.cache
def _entry_point_modules() -> tuple[str, ...]:
    return tuple(entry.value for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _import_backend_modules() -> None:
    for module in backend_modules():
        if module in _imported:
            continue
        _imported.add(module)
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            # A module that does not exist (yet) registers nothing; a module that exists but
            # fails to import one of *its* dependencies is a real error.
            if e.name is not None and (module == e.name or module.startswith(e.name + ".")):
                continue
            _imported.discard(module)
            raise _module_error(module, e) from e
        except Exception as e:  # a user's module with a bug: report it, never a traceback
            _imported.discard(module)
            raise _module_error(module, e) from e


def _module_error(module: str, e: BaseException) -> HarnessError:
    return HarnessError(
        Issue(
            file=module,
            message=f"backend module {module!r} failed to import: {type(e).__name__}: {e}",
            hint=f"fix the module or remove it from {BACKEND_MODULES_ENV}",
        )
    )


def _same_function(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    return a is b or (
        getattr(a, "__module__", None) == getattr(b, "__module__", None)
        and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
    )
