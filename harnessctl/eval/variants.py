"""Held-out harness variants for the ``variant`` suite, described by a spec and regenerated.

A variant case stores only the spec — the seed, the operator families, the strength and the
``heldout`` split — never the variant itself. At eval time HSA (``harnessctl.augment``)
regenerates the identical variant from it, on the harness being evaluated. Held-out specs use
the augment room's held-out split: seeds and surface vocabularies disjoint from training data.

>>> spec = variant_spec(seed=52001000, ops=["tools"], strength=0.5)
>>> spec["kind"], spec["split"], spec["id"]
('variant', 'heldout', 'heldout-tools-52001000')

Every held-out variant of the suite also carries ``bind``: its reply constraints moved near the
lowest values the task allows (:func:`binding_constraints`), so each one holds a change that a
policy fitted to the source harness fails.
"""

from __future__ import annotations

from typing import Any

#: HSA's five operator families, in the order the issue lists them.
OPERATOR_FAMILIES = ("skills", "skill_content", "tools", "prompt", "hooks")


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
    import random

    from harnessctl.augment.feasibility import feasible_floors

    floors = feasible_floors(base)
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
    from harnessctl.augment.variants import make_variant

    variant = make_variant(
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
