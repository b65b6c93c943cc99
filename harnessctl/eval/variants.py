"""Held-out harness variants for the ``variant`` suite, described by a spec and regenerated.

A variant case stores only the spec — the seed, the operator families, the strength and the
``heldout`` split — never the variant itself. At eval time HSA (``harnessctl.augment``)
regenerates the identical variant from it, on the harness being evaluated. Held-out specs use
the augment room's held-out split: seeds and surface vocabularies disjoint from training data.

>>> spec = variant_spec(seed=52001000, ops=["tools"], strength=0.5)
>>> spec["kind"], spec["split"], spec["id"]
('variant', 'heldout', 'heldout-tools-52001000')
"""

from __future__ import annotations

from typing import Any

#: HSA's five operator families, in the order the issue lists them.
OPERATOR_FAMILIES = ("skills", "skill_content", "tools", "prompt", "hooks")


def variant_spec(seed: int, ops: list[str], strength: float = 0.5, split: str = "heldout") -> dict[str, Any]:
    """The spec a variant case stores."""
    for op in ops:
        if op not in OPERATOR_FAMILIES:
            raise ValueError(f"unknown operator family {op!r}; families are {', '.join(OPERATOR_FAMILIES)}")
    name = "mix" if len(ops) > 1 else ops[0]
    return {"kind": "variant", "id": f"{split}-{name}-{seed}", "seed": int(seed), "ops": list(ops), "strength": float(strength), "split": split}


def regenerate_variant(base: Any, spec: dict[str, Any]) -> Any:
    """The variant harness a spec describes, regenerated from ``base`` by HSA."""
    from harnessctl.augment.variants import make_variant

    variant = make_variant(
        base, seed=int(spec["seed"]), ops=list(spec["ops"]), strength=float(spec.get("strength", 0.5)),
        split=spec.get("split", "heldout"), variant_id=spec.get("id"),
    )
    return variant.harness
