"""Model strings -> backends, in one place.

- ``oracle`` — the simulator's reference policy (:class:`harnessctl.sim.oracle.OracleModel`);
- ``oracle-blind[:<harness folder>][@<rev>]`` — the same policy seeing only one reference harness's
  surface, whatever harness it runs under (:class:`harnessctl.sim.oracle.OracleBlindModel`): the
  ceiling of a model that memorised it. The surface is the folder's (default
  ``harnesses/livecommerce``) or, with ``@<rev>``, that folder's harness at a version, tag or git
  commit (``oracle-blind@v3``, ``oracle-blind:harnesses/livecommerce@a1b2c3d``) — the model
  trained under that release (:func:`memorised_surface` says which);
- ``local:<path>`` — a checkpoint run in process (:class:`~harnessctl.models.local.LocalModel`);
- ``llamacpp:<file.gguf or folder>`` — a GGUF file, or a model/adapter folder exported to one once, run
  in process by llama.cpp (:class:`~harnessctl.models.llamacpp.LlamaCppModel`; needs ``harnessctl[llamacpp]``);
- ``shipped:<name>`` — a checkpoint shipped in the package (``harnessctl/models/data/<name>/``, written by
  ``harnessctl model ship``), run in process like ``local:`` (:func:`expand_model_spec`);
- anything else — a litellm provider string (:class:`~harnessctl.models.litellm_backend.LiteLLMModel`),
  e.g. ``openai/tiny`` with ``api_base="http://127.0.0.1:8000/v1"``.

The default model (:func:`default_model_spec`): ``$HARNESSCTL_MODEL`` when set, else the trained
embedded default at ``.harnessctl/models/default`` when that folder holds a checkpoint, else the
HAT model shipped in the package (``harnessctl/models/data/hat``, written by ``harnessctl experiment
hat``) when the package holds one, else ``oracle``. ``harnessctl model init`` builds an *untrained* tiny model (under
``.harnessctl/models/tiny`` by default); it becomes the default only once trained into
``.harnessctl/models/default`` or named in ``$HARNESSCTL_MODEL``.

>>> resolve_model("oracle").name          # doctest: +SKIP
'oracle'
>>> default_model_spec(environ={}, root=Path("/nonexistent"), shipped=Path("/nonexistent"))
'oracle'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnessctl.models.base import ModelBackend, ModelError

ORACLE = "oracle"
ORACLE_BLIND = "oracle-blind"
#: The harness ``oracle-blind`` memorised unless told otherwise.
BLIND_REFERENCE = Path("harnesses") / "livecommerce"
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
    if spec.startswith(SHIPPED_PREFIX):
        if api_base:
            raise ModelError("--api-base is for served models; shipped:<name> runs in process")
        from harnessctl.models.local import LocalModel

        shipped = LocalModel(expand_model_spec(spec))
        shipped.name = spec  # records and reports name it, not its install path
        return shipped
    if spec == ORACLE:
        if api_base:
            raise ModelError("--api-base is for served models; the oracle runs in process")
        from harnessctl.sim.oracle import OracleModel

        return OracleModel()
    if is_oracle_blind(spec):
        if api_base:
            raise ModelError("--api-base is for served models; oracle-blind runs in process")
        return _oracle_blind(spec)
    if spec.startswith("local:"):
        if api_base:
            raise ModelError("--api-base is for served models; local:<path> runs in process")
        if spec == "local:":
            raise ModelError("local: needs a path, e.g. local:.harnessctl/models/tiny")
        from harnessctl.models.local import LocalModel

        return LocalModel(spec)
    if spec.startswith("llamacpp:"):
        if api_base:
            raise ModelError("--api-base is for served models; llamacpp:<path> runs in process")
        if spec == "llamacpp:":
            raise ModelError("llamacpp: needs a GGUF file or a model folder, e.g. llamacpp:out/sft")
        from harnessctl.models.llamacpp import LlamaCppModel

        inner = spec[len("llamacpp:") :]
        backend = LlamaCppModel(expand_model_spec(inner).removeprefix("local:"))
        if inner.startswith(SHIPPED_PREFIX):
            backend.name = spec  # records name it, not its install path
        return backend
    from harnessctl.models.litellm_backend import LiteLLMModel

    return LiteLLMModel(
        spec, api_base=api_base, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries, extra=extra
    )


def shipped_names(data_root: Path | None = None) -> list[str]:
    """The names of the checkpoints shipped in the package (folders under ``data_root`` that hold a
    ``config.json``), sorted.

    >>> shipped_names(Path("/nonexistent"))
    []
    """
    root = SHIPPED_DATA_DIR if data_root is None else Path(data_root)
    if not root.is_dir():
        return []
    return sorted(
        p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and (p / "config.json").is_file()
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


def is_oracle_blind(spec: str) -> bool:
    """Whether a model string names the harness-blind reference, in any of its forms.

    >>> [is_oracle_blind(s) for s in ("oracle-blind", "oracle-blind@v3", "oracle-blind:h@HEAD~1", "oracle")]
    [True, True, True, False]
    """
    return spec == ORACLE_BLIND or spec.startswith((ORACLE_BLIND + ":", ORACLE_BLIND + "@"))


def blind_parts(spec: str) -> tuple[str, str | None]:
    """``(harness folder, revision or None)`` of an ``oracle-blind`` model string.

    >>> blind_parts("oracle-blind@v3"), blind_parts("oracle-blind:h/x@a1b2c3d"), blind_parts("oracle-blind:h/x")
    (('harnesses/livecommerce', 'v3'), ('h/x', 'a1b2c3d'), ('h/x', None))
    """
    rest = spec[len(ORACLE_BLIND) :]
    rest, at, rev = rest.rpartition("@") if "@" in rest else (rest, "", "")
    folder = rest[1:] if rest.startswith(":") else rest
    if at and not rev.strip():
        raise ModelError(f"{spec}: name a version, tag or commit after @, e.g. {ORACLE_BLIND}@v3")
    return folder or str(BLIND_REFERENCE), (rev.strip() or None)


def memorised_surface(spec: str) -> dict[str, Any] | None:
    """Which surface an ``oracle-blind`` model string memorised: ``{harness, path, rev, label,
    commit, version}`` (``commit`` None for a folder); None for any other model. Raises
    :class:`ModelError` when the folder or revision names no harness.

    >>> memorised_surface("oracle") is None
    True
    >>> memorised_surface("oracle-blind@v2")["label"]      # doctest: +SKIP
    'livecommerce v2 (e8142c4)'
    """
    if not is_oracle_blind(spec):
        return None
    return _resolve_blind(spec)[1]


def _resolve_blind(spec: str) -> tuple[Any, dict[str, Any]]:
    from harnessctl.harness import HarnessError
    from harnessctl.harness.store import HarnessStore

    folder, rev = blind_parts(spec)
    if not (Path(folder) / "harness.yaml").is_file():
        raise ModelError(
            f"oracle-blind: no harness at {folder!r}; name the harness it memorised, e.g. oracle-blind:harnesses/livecommerce"
        )
    try:
        resolved = HarnessStore(folder).resolve(rev)
    except HarnessError as e:
        raise ModelError(f"oracle-blind: {e}") from None
    h = resolved.harness
    label = f"{h.name} {resolved.label}" if rev else f"{h.name} (folder {folder})"
    if resolved.commit and resolved.label != resolved.commit[:7]:
        label += f" ({resolved.commit[:7]})"
    info = {
        "harness": h.name,
        "path": folder,
        "rev": rev,
        "label": label,
        "commit": resolved.commit,
        "version": resolved.version,
    }
    return h, info


def _oracle_blind(spec: str) -> ModelBackend:
    from harnessctl.sim.oracle import OracleBlindModel

    reference, info = _resolve_blind(spec)
    return OracleBlindModel(reference, memorised=info)


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
