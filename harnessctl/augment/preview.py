"""Preview one variant: the variant and its semantic diff against the source, nothing written.

>>> p = preview_variant(load_harness("harnesses/livecommerce"), VariantSpec(seed=3))   # doctest: +SKIP
>>> p.diff.counts()["tool"]["renamed"]                                                  # doctest: +SKIP
4
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harnessctl.harness.diff import HarnessDiff, diff_harnesses
from harnessctl.harness.model import Harness

from .paraphrase import Paraphraser
from .variants import Variant, VariantSpec, iter_variants


@dataclass
class Preview:
    """A variant and what changed from its source, by stable key."""

    variant: Variant
    diff: HarnessDiff

    def to_dict(self) -> dict[str, Any]:
        return {"variant_id": self.variant.id, "manifest": self.variant.manifest.to_dict(), "diff": self.diff.to_dict()}


def preview_variant(
    source: Harness, spec: VariantSpec, index: int = 0, *, paraphraser: Paraphraser | None = None
) -> Preview:
    """Variant ``index`` of ``spec`` (exactly what ``write_variants`` would write) and its diff."""
    (variant,) = iter_variants(source, spec, [index], paraphraser=paraphraser)
    label = source.version or source.name
    diff = diff_harnesses(source, variant.harness, from_label=label, to_label=variant.id)
    return Preview(variant, diff)
