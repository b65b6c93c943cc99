"""Variants: a source harness run through the HSA operators, with a manifest.

A variant is identified by its split and seed. Its operators are seeded from
``(split, seed, operator)``, so a training and a held-out variant never share a random stream
even when their seeds are equal, and each split draws surfaces from its own vocabulary
(:mod:`harnessctl.augment.vocab`): held-out variants cannot leak into training data.

>>> from harnessctl.harness import load_harness
>>> src = load_harness("harnesses/livecommerce")                       # doctest: +SKIP
>>> v = make_variant(src, seed=7, ops=["tools", "prompt"], strength=0.5, split="heldout")   # doctest: +SKIP
>>> v.id, v.manifest.surface["tools"]["order_status"]                  # doctest: +SKIP
('heldout-7', 'pivo_ranek')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from harnessctl.harness.model import Harness

from .feasibility import feasible_floors
from .manifest import SourceInfo, VariantManifest, source_info, surface_map
from .operators import OpContext, apply_operators, derive_seed, resolve_operators
from .paraphrase import Paraphraser
from .paraphrasers import make_paraphraser
from .vocab import check_split

DEFAULT_STRENGTH = 0.5


@dataclass
class Variant:
    """A variant harness (in memory) and its manifest."""

    id: str
    harness: Harness
    manifest: VariantManifest


@dataclass
class VariantSpec:
    """How a set of variants is made; the same spec and index always give the same variant."""

    seed: int = 0
    ops: list[str] = field(default_factory=lambda: resolve_operators(None))
    strength: float = DEFAULT_STRENGTH
    split: str = "train"
    paraphraser: str = "lexicon"
    keep_first_block: bool = True

    def __post_init__(self) -> None:
        check_split(self.split)
        self.ops = resolve_operators(self.ops)
        if not 0.0 <= self.strength <= 1.0:
            raise ValueError(f"strength must be within [0, 1], got {self.strength}")

    def variant_seed(self, index: int) -> int:
        """The seed of variant ``index`` (different splits never share one)."""
        return derive_seed("variant", self.split, self.seed, index)

    def variant_id(self, index: int) -> str:
        return f"{self.split}-s{self.seed}-{index:04d}"


def make_variant(
    source: Harness,
    *,
    seed: int,
    ops: Iterable[str] | None = None,
    strength: float = DEFAULT_STRENGTH,
    split: str = "train",
    variant_id: str | None = None,
    paraphraser: Paraphraser | str | None = None,
    constraint_floors: dict[str, float] | None = None,
    protected_skill_keys: Iterable[str] | None = None,
    retry_floor: int | None = None,
    keep_first_block: bool = True,
    source_meta: SourceInfo | None = None,
) -> Variant:
    """One variant of ``source``; the source is not modified.

    ``constraint_floors`` are the lowest constraint values that keep the task feasible; when
    ``None`` they are measured once per source harness with the oracle
    (:func:`harnessctl.augment.feasibility.feasible_floors`). ``protected_skill_keys`` turns on
    ``hide_skills`` for a known case (those skills stay).

    >>> v = make_variant(src, seed=3, ops=["skills"], split="train")   # doctest: +SKIP
    >>> v.manifest.operators[0].operator                                 # doctest: +SKIP
    'rewrite_skill_descriptions'
    """
    check_split(split)
    op_names = resolve_operators(ops)
    para = (
        paraphraser if paraphraser is not None and not isinstance(paraphraser, str) else make_paraphraser(paraphraser)
    )
    if constraint_floors is None:
        constraint_floors = feasible_floors(source)
    ctx = OpContext(
        split=split,
        strength=strength,
        paraphraser=para,
        protected_skill_keys=frozenset(protected_skill_keys) if protected_skill_keys is not None else None,
        constraint_floors=dict(constraint_floors),
        retry_floor=retry_floor,
        keep_first_block=keep_first_block,
    )
    harness, records = apply_operators(source, op_names, seed=derive_seed(split, seed), ctx=ctx)
    vid = variant_id or f"{split}-{seed}"
    manifest = VariantManifest(
        variant_id=vid,
        split=split,
        seed=int(seed),
        strength=float(strength),
        ops=op_names,
        paraphraser=para.name,
        source=source_meta if source_meta is not None else source_info(source),
        operators=records,
        surface=surface_map(harness, source),
    )
    return Variant(vid, harness, manifest)


def iter_variants(
    source: Harness,
    spec: VariantSpec,
    indices: Iterable[int],
    *,
    paraphraser: Paraphraser | None = None,
    constraint_floors: dict[str, float] | None = None,
    source_meta: SourceInfo | None = None,
) -> Iterator[Variant]:
    """The variants ``indices`` of ``spec``, made one at a time.

    >>> [v.id for v in iter_variants(src, VariantSpec(seed=1), range(2))]   # doctest: +SKIP
    ['train-s1-0000', 'train-s1-0001']
    """
    para = paraphraser or make_paraphraser(spec.paraphraser)
    if constraint_floors is None:
        constraint_floors = feasible_floors(source)
    meta = source_meta if source_meta is not None else source_info(source)
    for i in indices:
        yield make_variant(
            source,
            seed=spec.variant_seed(i),
            ops=spec.ops,
            strength=spec.strength,
            split=spec.split,
            variant_id=spec.variant_id(i),
            paraphraser=para,
            constraint_floors=constraint_floors,
            keep_first_block=spec.keep_first_block,
            source_meta=meta,
        )
