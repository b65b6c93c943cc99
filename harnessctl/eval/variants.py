"""Held-out harness variants for the ``variant`` suite: a spec in each case, the harness frozen beside it.

A variant case stores the variant's spec — the seed, the operator families, the strength, the
``heldout`` split and the bound constraints. The harness the spec describes is built once, when
the suites are built, and written as data beside the suites: ``evals/variants/<spec id>.json``
holds its harness documents (the files of a harness folder, as plain JSON) and the fingerprint
of the source harness it was made from. At eval time:

- the harness under evaluation is that source (same fingerprint): the frozen variant is loaded
  and HSA (``harnessctl.augment``) never runs, so a change to the operators cannot change the
  benchmark;
- another harness: HSA regenerates the variant from the spec on *that* harness (its variant is
  the one to test), and the run records it as ``regenerated``, with why.

Held-out specs use the augment room's held-out split: seeds and surface vocabularies disjoint
from training data.

>>> spec = variant_spec(seed=52001000, ops=["tools"], strength=0.5)
>>> spec["kind"], spec["split"], spec["id"]
('variant', 'heldout', 'heldout-tools-52001000')
>>> frozen_path(spec["id"])
PosixPath('evals/variants/heldout-tools-52001000.json')

Every held-out variant of the suite also carries ``bind``: its reply constraints moved near the
lowest values the task allows (:func:`binding_constraints`), so each one holds a change that a
policy fitted to the source harness fails.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from harnessctl.augment import feasibility
from harnessctl.augment import variants as hsa  # make_variant looked up when called: a replacement takes effect
from harnessctl.augment.feasibility import harness_fingerprint
from harnessctl.harness import build_harness
from harnessctl.harness.save import render_harness_files
from harnessctl.harness.yamlio import parse_yaml_data

from .suites import SuiteError, file_sha256

#: HSA's five operator families, in the order the issue lists them.
OPERATOR_FAMILIES = ("skills", "skill_content", "tools", "prompt", "hooks")
#: The folder beside the suite files that holds the frozen variants, one file per spec id.
VARIANTS_DIR = "variants"
#: Bumped when the layout of a frozen variant file changes.
FROZEN_FORMAT_VERSION = 1
#: How a run obtained a variant harness (recorded per variant in its manifest and summary).
FROZEN, REGENERATED = "frozen", "regenerated"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class FrozenVariantError(SuiteError):
    """A frozen variant file is missing, damaged or stale; the message names the file and the
    command that rebuilds it."""


def variant_spec(
    seed: int, ops: list[str], strength: float = 0.5, split: str = "heldout", bind: dict[str, float] | None = None
) -> dict[str, Any]:
    """The spec a variant case stores. ``bind``: constraint values set after the operators ran
    (a constraint moved so that replies fitted to the source harness break it)."""
    for op in ops:
        if op not in OPERATOR_FAMILIES:
            raise ValueError(f"unknown operator family {op!r}; families are {', '.join(OPERATOR_FAMILIES)}")
    name = "mix" if len(ops) > 1 else ops[0]
    spec = {
        "kind": "variant",
        "id": f"{split}-{name}-{seed}",
        "seed": int(seed),
        "ops": list(ops),
        "strength": float(strength),
        "split": split,
    }
    if bind:
        spec["bind"] = dict(bind)
    return spec


def binding_constraints(base: Any, seed: int) -> dict[str, float]:
    """Reply constraints a held-out variant moves to (near) the lowest values the task allows:
    ``max_reply_chars`` within 10 characters of its feasibility floor, ``max_emojis`` at its
    minimum. A policy that fits its replies to the source harness breaks them; one that reads
    the variant does not (the floors are measured with the oracle)."""
    floors = feasibility.feasible_floors(base)
    out: dict[str, float] = {}
    cons = base.prompt.constraints
    if "max_reply_chars" in cons:
        c = cons["max_reply_chars"]
        lo = max(c.min, floors.get("max_reply_chars", c.min))
        out["max_reply_chars"] = int(min(c.max, lo + random.Random(f"bind|{seed}").randint(0, 10)))
    if "max_emojis" in cons:
        out["max_emojis"] = cons["max_emojis"].min
    return out


def regenerate_variant(base: Any, spec: dict[str, Any]) -> Any:
    """The variant harness a spec describes, regenerated from ``base`` by HSA (then its
    ``bind`` constraint values set, clamped into each constraint's range)."""
    variant = hsa.make_variant(
        base,
        seed=int(spec["seed"]),
        ops=list(spec["ops"]),
        strength=float(spec.get("strength", 0.5)),
        split=spec.get("split", "heldout"),
        variant_id=spec.get("id"),
    )
    h = variant.harness
    for key, value in (spec.get("bind") or {}).items():
        c = h.prompt.constraints.get(key)
        if c is not None:
            c.value = type(c.value)(min(max(value, c.min), c.max))
    return h


# -- frozen variants ----------------------------------------------------------------------------


def frozen_path(spec_id: str, evals_dir: str | Path = "evals") -> Path:
    """Where the variant of spec ``spec_id`` is frozen: ``<evals_dir>/variants/<spec id>.json``."""
    if not _SAFE_ID.match(str(spec_id)):
        raise ValueError(f"variant id {spec_id!r} cannot name a file (letters, digits, '.', '_' and '-' only)")
    return Path(evals_dir) / VARIANTS_DIR / f"{spec_id}.json"


def rebuild_command(evals_dir: str | Path = "evals") -> str:
    """The command that rewrites the variant suite and its frozen variants.

    >>> rebuild_command(), rebuild_command("evals-myshop")
    ('harnessctl eval build-suites --suite variant', 'harnessctl eval build-suites --suite variant --evals-dir evals-myshop')
    """
    where = "" if Path(evals_dir) == Path("evals") else f" --evals-dir {evals_dir}"
    return f"harnessctl eval build-suites --suite variant{where}"


def harness_documents(h: Any) -> dict[str, dict[str, Any]]:
    """The documents of a harness folder — ``harness.yaml``, ``prompt.yaml``, ``hooks.yaml``,
    ``skills/*.yaml``, ``tools/*.yaml`` — as plain data, by relative path in load order; they
    are what :func:`harnessctl.harness.build_harness` builds a harness from."""
    return {rel: parse_yaml_data(text, rel) for rel, text in render_harness_files(h).items()}


def freeze_variant(base: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The frozen form of the variant ``spec`` describes: regenerated from ``base`` once, its
    harness documents with the fingerprints of the variant and of its source. Refuses a variant
    whose documents do not build back to the same harness (it could not be frozen faithfully)."""
    variant = regenerate_variant(base, spec)
    docs = harness_documents(variant)
    fingerprint = harness_fingerprint(variant)
    if harness_fingerprint(build_harness(json.loads(json.dumps(docs)))) != fingerprint:
        raise ValueError(f"variant {spec.get('id')}: its harness documents do not build back to the same harness")
    return {
        "format_version": FROZEN_FORMAT_VERSION,
        "id": spec["id"],
        "spec": spec,
        "source": {
            "name": getattr(base, "name", None),
            "version": getattr(base, "version", None),
            "fingerprint": harness_fingerprint(base),
        },
        "fingerprint": fingerprint,
        "documents": docs,
    }


def frozen_text(frozen: dict[str, Any]) -> str:
    """The bytes a frozen variant file holds (deterministic: the same variant, the same text)."""
    return json.dumps(frozen, indent=1, ensure_ascii=False) + "\n"


def variant_specs(items: Any) -> dict[str, dict[str, Any]]:
    """The distinct held-out variant specs of suite items, by id, in first-seen order."""
    specs: dict[str, dict[str, Any]] = {}
    for item in items:
        spec = getattr(item, "harness", None) or {}
        if spec.get("kind") == "variant" and "base" not in spec:
            specs.setdefault(str(spec["id"]), spec)
    return specs


def read_frozen(path: str | Path, spec: dict[str, Any], evals_dir: str | Path = "evals") -> dict[str, Any]:
    """The frozen variant file at ``path`` for ``spec``, checked: present, well formed, frozen from
    this very spec. Raises :class:`FrozenVariantError` naming the file and the rebuild command."""
    path = Path(path)
    rebuild = rebuild_command(evals_dir)
    if not path.is_file():
        raise FrozenVariantError(
            f"{path}: frozen variant {spec.get('id')} missing (the variant suite's harnesses are stored beside "
            f"it); rebuild it with `{rebuild}`"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise TypeError("not a JSON object")
        if doc.get("format_version") != FROZEN_FORMAT_VERSION:
            raise ValueError(f"format version {doc.get('format_version')!r}, expected {FROZEN_FORMAT_VERSION}")
        for key in ("spec", "source", "documents"):
            if not isinstance(doc.get(key), dict):
                raise KeyError(key)
        if not isinstance(doc["source"].get("fingerprint"), str) or not isinstance(doc.get("fingerprint"), str):
            raise KeyError("fingerprint")
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as e:
        why = f"no {e.args[0]}" if isinstance(e, KeyError) else str(e)
        raise FrozenVariantError(f"{path}: not a frozen variant ({why}); rebuild it with `{rebuild}`") from None
    if doc["spec"] != spec:
        raise FrozenVariantError(
            f"{path}: frozen from another spec than the suite's cases name (the suite was rebuilt without it); "
            f"rebuild it with `{rebuild}`"
        )
    return doc


def thaw_variant(
    doc: dict[str, Any], path: str | Path, root: str | None = None, evals_dir: str | Path = "evals"
) -> Any:
    """The harness of a checked frozen variant (``root``: the folder its skill files are served
    from, the source harness's); its fingerprint must be the one recorded, or the file was edited
    or damaged: :class:`FrozenVariantError`."""
    try:
        h = build_harness(doc["documents"], root=root)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise FrozenVariantError(
            f"{path}: its harness documents do not build a harness ({type(e).__name__}: {e}); "
            f"rebuild it with `{rebuild_command(evals_dir)}`"
        ) from None
    if harness_fingerprint(h) != doc["fingerprint"]:
        raise FrozenVariantError(
            f"{path}: its harness documents do not match the fingerprint recorded with them (edited or damaged); "
            f"rebuild it with `{rebuild_command(evals_dir)}`"
        )
    return h


def obtain_variant(base: Any, spec: dict[str, Any], evals_dir: str | Path | None) -> tuple[Any, dict[str, Any]]:
    """The variant harness of ``spec`` on ``base`` and how it was obtained: ``{"source": "frozen",
    "file", "sha256"}`` when ``base`` is the harness the suite froze it from (HSA is not run), else
    ``{"source": "regenerated", "why"}`` — regenerated by HSA on ``base``. ``evals_dir=None``:
    no suites folder to read from, always regenerated."""
    if evals_dir is None or "id" not in spec:
        why = "no suites folder to read frozen variants from" if evals_dir is None else "the spec names no id"
        return regenerate_variant(base, spec), {"source": REGENERATED, "why": why}
    path = frozen_path(str(spec["id"]), evals_dir)
    doc = read_frozen(path, spec, evals_dir)
    frozen_from, here = doc["source"]["fingerprint"], harness_fingerprint(base)
    if frozen_from != here:
        name = getattr(base, "name", None) or "the harness"
        why = (
            f"{name} (fingerprint {here}) is not the harness the suite froze its variants from "
            f"({doc['source'].get('name')}, fingerprint {frozen_from}): HSA applied the spec to it"
        )
        return regenerate_variant(base, spec), {"source": REGENERATED, "why": why}
    harness = thaw_variant(doc, path, getattr(base, "root", None), evals_dir)
    return harness, {"source": FROZEN, "file": str(path), "sha256": file_sha256(path)}


def provenance(variants: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A run's record of how it obtained its variants: counts of ``frozen`` and ``regenerated``,
    and each variant's entry (see :func:`obtain_variant`).

    >>> provenance({"v1": {"source": "frozen", "file": "evals/variants/v1.json"}})["frozen"]
    1
    """
    return {
        FROZEN: sum(1 for v in variants.values() if v.get("source") == FROZEN),
        REGENERATED: sum(1 for v in variants.values() if v.get("source") == REGENERATED),
        "by_variant": {k: dict(variants[k]) for k in sorted(variants)},
    }
