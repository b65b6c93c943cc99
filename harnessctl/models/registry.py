"""Model strings -> backends, in one place: a name -> factory registry that owns what a model
string means.

A *kind* of model string is registered by the layer that defines its backend
(:func:`register_model`); whatever no registered kind matches is a litellm provider string.
This module registers the models layer's own kinds:

- ``local:<path>`` — a checkpoint run in process (:class:`~harnessctl.models.local.LocalModel`);
- ``llamacpp:<file.gguf or folder>`` — a GGUF file, or a model/adapter folder exported to one once, run
  in process by llama.cpp (:class:`~harnessctl.models.llamacpp.LlamaCppModel`; needs ``harnessctl[llamacpp]``);
- ``shipped:<name>`` — a checkpoint shipped in the package (``harnessctl/models/data/<name>/``, written by
  ``harnessctl model ship``), run in process like ``local:`` (:func:`expand_model_spec`);
- anything else — a litellm provider string (:class:`~harnessctl.models.litellm_backend.LiteLLMModel`),
  e.g. ``openai/tiny`` with ``api_base="http://127.0.0.1:8000/v1"``.

The simulator registers ``oracle`` and ``oracle-blind[:<harness folder>][@<rev>]``
(:mod:`harnessctl.sim.model_strings`) when it is imported. A package that registers kinds is
also named under the ``harnessctl.models`` entry-point group of the package metadata
(``pyproject.toml``), and the registry imports those the first time a model string matches no
registered kind, so that ``resolve_model("oracle")`` works whatever has been imported before.

The default model (:func:`default_model_spec`): ``$HARNESSCTL_MODEL`` when set, else the trained
embedded default at ``.harnessctl/models/default`` when that folder holds a checkpoint, else the
HAT model shipped in the package (``harnessctl/models/data/hat``, written by ``harnessctl experiment
hat``) when the package holds one, else ``oracle``. ``harnessctl model init`` builds an *untrained* tiny model (under
``.harnessctl/models/tiny`` by default); it becomes the default only once trained into
``.harnessctl/models/default`` or named in ``$HARNESSCTL_MODEL``.

>>> resolve_model("oracle").name
'oracle'
>>> model_kind("local:out/sft").name, model_kind("openai/tiny") is None
('local', True)
>>> default_model_spec(environ={}, root=Path("/nonexistent"), shipped=Path("/nonexistent"))
'oracle'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.models import plugins
from harnessctl.models.base import ModelBackend, ModelError
from harnessctl.models.plugins import load_entry_points

#: The reference policy's name: the default model when nothing else is configured (registered by
#: the simulator, :mod:`harnessctl.sim.model_strings`).
ORACLE = "oracle"
MODEL_ENV = "HARNESSCTL_MODEL"
#: Where the trained embedded default lives, relative to the project folder.
DEFAULT_MODEL_DIR = Path(".harnessctl") / "models" / "default"
#: Where ``harnessctl model ship`` puts checkpoints inside the package, one folder per name.
SHIPPED_DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED_PREFIX = "shipped:"
#: The shipped model that is the default when nothing else is configured.
SHIPPED_DEFAULT = "hat"
#: The trained model shipped inside the package (absent until a study's checkpoint is shipped).
SHIPPED_MODEL_DIR = SHIPPED_DATA_DIR / SHIPPED_DEFAULT
#: Where ``harnessctl model init`` writes the untrained tiny model unless told otherwise.
TINY_MODEL_DIR = Path(".harnessctl") / "models" / "tiny"


@dataclass(frozen=True)
class ModelKind:
    """One kind of model string: the name it starts with, the factory that builds its backend
    (in process: ``--api-base`` is refused) and what else the string means.

    ``bare``: the name alone is a model string (``oracle``); ``separators``: what may follow the
    name (``:`` for ``local:<path>``, ``@`` for a revision). ``memorised``: the surface a
    harness-blind model string memorised (see :func:`memorised_surface`). ``checkpoint``: the
    string names a checkpoint run in this process (transformers or llama.cpp), whose every case costs this
    machine's CPU seconds (``local:``, ``shipped:``, ``llamacpp:``; see :func:`runs_checkpoint`)."""

    name: str
    factory: Callable[[str], ModelBackend]
    label: str
    bare: bool = True
    separators: tuple[str, ...] = ()
    memorised: Callable[[str], dict[str, Any] | None] | None = None
    checkpoint: bool = False
    #: Whether the model answers general instructions (IFEval): False for the simulator's
    #: reference policies, which answer live-commerce cases from their answer keys only.
    answers_instructions: bool = True

    def matches(self, spec: str) -> bool:
        return (self.bare and spec == self.name) or any(spec.startswith(self.name + s) for s in self.separators)


_KINDS: dict[str, ModelKind] = {}


def register_model(
    name: str,
    factory: Callable[[str], ModelBackend],
    *,
    label: str | None = None,
    bare: bool = True,
    separators: tuple[str, ...] = (),
    memorised: Callable[[str], dict[str, Any] | None] | None = None,
    checkpoint: bool = False,
    answers_instructions: bool = True,
) -> ModelKind:
    """Register (or replace) the kind of model string ``name``: ``factory(spec)`` builds the
    backend for a string of that kind; ``label`` names it in errors (default: ``name``); the
    other fields are :class:`ModelKind`'s."""
    kind = ModelKind(name, factory, label or name, bare, tuple(separators), memorised, checkpoint, answers_instructions)
    _KINDS[name] = kind
    return kind


def registered_models() -> list[str]:
    """The names of the registered kinds of model string, sorted."""
    load_entry_points()
    return sorted(_KINDS)


def model_kind(spec: str) -> ModelKind | None:
    """The registered kind a model string is of; None for a litellm provider string."""
    kind = _match(spec)
    if kind is None and not plugins.loaded():
        load_entry_points()
        kind = _match(spec)
    return kind


def _match(spec: str) -> ModelKind | None:
    return next((k for k in _KINDS.values() if k.matches(spec)), None)


def resolve_model(
    spec: str,
    *,
    api_base: str | None = None,
    api_key_env: str | None = None,
    timeout_s: float | None = None,
    max_retries: int = 2,
    extra: dict[str, Any] | None = None,
) -> ModelBackend:
    """The backend for a model string. Raises :class:`ModelError` with a message that says
    what to fix (an unknown provider, a missing model folder, an unset key variable)."""
    spec = (spec or "").strip()
    if not spec:
        raise ModelError("empty model string: use oracle, local:<path> or a litellm string such as openai/<name>")
    kind = model_kind(spec)
    if kind is not None:
        if api_base:
            raise ModelError(f"--api-base is for served models; {kind.label} runs in process")
        return kind.factory(spec)
    # lazy: the litellm backend loads only for a litellm string (off the `harnessctl --help` path)
    from harnessctl.models.litellm_backend import LiteLLMModel

    return LiteLLMModel(
        spec, api_base=api_base, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries, extra=extra
    )


def runs_checkpoint(spec: str) -> bool:
    """Whether a model string names a checkpoint run in this process (its kind declares
    ``checkpoint``): its cases share this machine's CPU.

    >>> runs_checkpoint("shipped:hat"), runs_checkpoint("local:m"), runs_checkpoint("openai/x"), runs_checkpoint("oracle")
    (True, True, False, False)
    """
    kind = model_kind(spec)
    return kind is not None and kind.checkpoint


def answers_instructions(spec: str) -> bool:
    """Whether a model string's model answers general instructions (its kind declares
    ``answers_instructions``; a litellm string always does).

    >>> answers_instructions("openai/x"), answers_instructions("shipped:hat")
    (True, True)
    """
    kind = model_kind(spec)
    return kind is None or kind.answers_instructions


def memorised_surface(spec: str) -> dict[str, Any] | None:
    """Which surface a harness-blind model string memorised: ``{harness, path, rev, label,
    commit, version}`` (``commit`` None for a folder), from its kind; None for any other model.
    Raises :class:`ModelError` when the string names no harness to have memorised.

    >>> memorised_surface("oracle") is None
    True
    >>> memorised_surface("oracle-blind@v2")["label"]      # doctest: +SKIP
    'livecommerce v2 (e8142c4)'
    """
    kind = model_kind(spec)
    return kind.memorised(spec) if kind is not None and kind.memorised is not None else None


def _shipped(spec: str) -> ModelBackend:
    # lazy: the checkpoint backends (and their torch loaders) stay off the `harnessctl --help` path
    from harnessctl.models.local import LocalModel

    shipped = LocalModel(expand_model_spec(spec))
    shipped.name = spec  # records and reports name it, not its install path
    return shipped


def _local(spec: str) -> ModelBackend:
    if spec == "local:":
        raise ModelError("local: needs a path, e.g. local:.harnessctl/models/tiny")
    # lazy: the checkpoint backends (and their torch loaders) stay off the `harnessctl --help` path
    from harnessctl.models.local import LocalModel

    return LocalModel(spec)


def _llamacpp(spec: str) -> ModelBackend:
    if spec == "llamacpp:":
        raise ModelError("llamacpp: needs a GGUF file or a model folder, e.g. llamacpp:out/sft")
    # lazy: the llama.cpp backend stays off the `harnessctl --help` path
    from harnessctl.models.llamacpp import LlamaCppModel

    inner = spec[len("llamacpp:") :]
    backend = LlamaCppModel(expand_model_spec(inner).removeprefix("local:"))
    if inner.startswith(SHIPPED_PREFIX):
        backend.name = spec  # records name it, not its install path
    return backend


register_model("shipped", _shipped, label="shipped:<name>", bare=False, separators=(":",), checkpoint=True)
register_model("local", _local, label="local:<path>", bare=False, separators=(":",), checkpoint=True)
register_model("llamacpp", _llamacpp, label="llamacpp:<path>", bare=False, separators=(":",), checkpoint=True)


def shipped_names(data_root: Path | None = None) -> list[str]:
    """The names of the checkpoints shipped in the package (folders under ``data_root`` that hold a
    ``config.json``, or an ``adapter_config.json`` for an adapter on a base), sorted.

    >>> shipped_names(Path("/nonexistent"))
    []
    """
    root = SHIPPED_DATA_DIR if data_root is None else Path(data_root)
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir()
        and not p.name.startswith(".")
        and ((p / "config.json").is_file() or (p / "adapter_config.json").is_file())
    )


def shipped_model_dir(name: str, data_root: Path | None = None) -> Path:
    """The folder of the shipped checkpoint ``name``; a :class:`ModelError` listing the shipped
    names when there is none by that name.

    >>> shipped_model_dir("hat", Path("/nonexistent"))
    Traceback (most recent call last):
    ...
    harnessctl.models.base.ModelError: shipped:hat: no such shipped model (none is shipped in this package; ship one with `harnessctl model ship --study experiments/<id> --arm hat`)
    """
    root = SHIPPED_DATA_DIR if data_root is None else Path(data_root)
    names = shipped_names(root)
    if name not in names or "/" in name or name.startswith("."):
        listing = (
            f"shipped: {', '.join(names)}"
            if names
            else "none is shipped in this package; ship one with `harnessctl model ship --study experiments/<id> --arm hat`"
        )
        raise ModelError(f"{SHIPPED_PREFIX}{name}: no such shipped model ({listing})")
    return root / name


def expand_model_spec(spec: str, data_root: Path | None = None) -> str:
    """``shipped:<name>`` as the ``local:<folder>`` it names; any other model string unchanged.
    Raises :class:`ModelError` (listing the shipped names) for an unknown name.

    >>> expand_model_spec("openai/tiny")
    'openai/tiny'
    """
    if not spec.startswith(SHIPPED_PREFIX):
        return spec
    name = spec[len(SHIPPED_PREFIX) :].strip()
    if not name:
        raise ModelError(f"{SHIPPED_PREFIX} needs a name, e.g. {SHIPPED_PREFIX}{SHIPPED_DEFAULT}")
    return f"local:{shipped_model_dir(name, data_root)}"


def default_model_spec(
    *, environ: Mapping[str, str] | None = None, root: Path | None = None, shipped: Path | None = None
) -> str:
    """The model used when none is given (see the module docstring for the order)."""
    return default_model_source(environ=environ, root=root, shipped=shipped)[0]


def default_model_source(
    *, environ: Mapping[str, str] | None = None, root: Path | None = None, shipped: Path | None = None
) -> tuple[str, str]:
    """The default model and where it came from: ``env``, ``trained`` (``.harnessctl/models/default``),
    ``shipped`` (the package's HAT model) or ``oracle``.

    >>> default_model_source(environ={}, root=Path("/nonexistent"), shipped=Path("/nonexistent"))
    ('oracle', 'oracle')
    """
    environ = os.environ if environ is None else environ
    configured = environ.get(MODEL_ENV, "").strip()
    if configured:
        return configured, "env"
    folder = (root or Path.cwd()) / DEFAULT_MODEL_DIR
    if (folder / "config.json").is_file():
        return f"local:{folder}", "trained"
    shipped = SHIPPED_MODEL_DIR if shipped is None else shipped
    if (shipped / "config.json").is_file():
        # named, not located: a run is labelled shipped:hat wherever the package is installed
        named = shipped.parent == SHIPPED_DATA_DIR
        return (f"{SHIPPED_PREFIX}{shipped.name}" if named else f"local:{shipped}"), "shipped"
    return ORACLE, "oracle"
