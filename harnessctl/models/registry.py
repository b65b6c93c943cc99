"""Model strings -> backends, in one place.

- ``oracle`` — the simulator's reference policy (:class:`harnessctl.sim.oracle.OracleModel`);
- ``oracle-blind[:<harness folder>]`` — the same policy seeing only one reference harness's
  surface (default ``harnesses/livecommerce``), whatever harness it runs under
  (:class:`harnessctl.sim.oracle.OracleBlindModel`): the ceiling of a model that memorised it;
- ``local:<path>`` — a checkpoint run in process (:class:`~harnessctl.models.local.LocalModel`);
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
        spec = expand_model_spec(spec)
    if spec == ORACLE:
        if api_base:
            raise ModelError("--api-base is for served models; the oracle runs in process")
        from harnessctl.sim.oracle import OracleModel

        return OracleModel()
    if spec == ORACLE_BLIND or spec.startswith(ORACLE_BLIND + ":"):
        if api_base:
            raise ModelError("--api-base is for served models; oracle-blind runs in process")
        return _oracle_blind(spec[len(ORACLE_BLIND) + 1 :] or str(BLIND_REFERENCE))
    if spec.startswith("local:"):
        if api_base:
            raise ModelError("--api-base is for served models; local:<path> runs in process")
        if spec == "local:":
            raise ModelError("local: needs a path, e.g. local:.harnessctl/models/tiny")
        from harnessctl.models.local import LocalModel

        return LocalModel(spec)
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


def _oracle_blind(path: str) -> ModelBackend:
    from harnessctl.harness import HarnessError, load_harness
    from harnessctl.sim.oracle import OracleBlindModel

    if not (Path(path) / "harness.yaml").is_file():
        raise ModelError(
            f"oracle-blind: no harness at {path!r}; name the harness it memorised, e.g. oracle-blind:harnesses/livecommerce"
        )
    try:
        return OracleBlindModel(load_harness(path))
    except HarnessError as e:
        raise ModelError(f"oracle-blind: {e}") from None


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
        return f"local:{shipped}", "shipped"
    return ORACLE, "oracle"
