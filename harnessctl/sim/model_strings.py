"""The simulator's model strings, registered with the model registry
(:func:`harnessctl.models.registry.register_model`) when the simulator is imported:

- ``oracle`` — the simulator's reference policy (:class:`~harnessctl.sim.oracle.OracleModel`);
- ``oracle-blind[:<harness folder>][@<rev>]`` — the same policy seeing only one reference harness's
  surface, whatever harness it runs under (:class:`~harnessctl.sim.oracle.OracleBlindModel`): the
  ceiling of a model that memorised it. The surface is the folder's (default
  ``harnesses/livecommerce``) or, with ``@<rev>``, that folder's harness at a version, tag or git
  commit (``oracle-blind@v3``, ``oracle-blind:harnesses/livecommerce@a1b2c3d``) — the model
  trained under that release (:func:`~harnessctl.models.registry.memorised_surface` says which).

The package metadata names the simulator under the registry's entry-point group, so a model
string resolves to these backends even where nothing has imported the simulator yet.

>>> from harnessctl.models.registry import model_kind, resolve_model
>>> model_kind("oracle-blind@v3").name, resolve_model("oracle").reads_answer_key
('oracle-blind', True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessctl.harness.errors import HarnessError
from harnessctl.harness.model import Harness
from harnessctl.harness.store import HarnessStore
from harnessctl.models.base import ModelBackend, ModelError
from harnessctl.models.registry import ORACLE, register_model
from harnessctl.sim.oracle import OracleBlindModel, OracleModel

ORACLE_BLIND = "oracle-blind"
#: The harness ``oracle-blind`` memorised unless told otherwise.
BLIND_REFERENCE = Path("harnesses") / "livecommerce"


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


def blind_surface(spec: str) -> tuple[Harness, dict[str, Any]]:
    """The reference harness an ``oracle-blind`` model string memorised, and which it is:
    ``{harness, path, rev, label, commit, version}`` (``commit`` None for a folder). Raises
    :class:`ModelError` when the folder or revision names no harness."""
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


def _oracle(spec: str) -> ModelBackend:
    return OracleModel()


def _oracle_blind(spec: str) -> ModelBackend:
    reference, info = blind_surface(spec)
    return OracleBlindModel(reference, memorised=info)


register_model(ORACLE, _oracle, label="the oracle", answers_instructions=False)
register_model(
    ORACLE_BLIND,
    _oracle_blind,
    separators=(":", "@"),
    memorised=lambda spec: blind_surface(spec)[1],
    answers_instructions=False,
)
