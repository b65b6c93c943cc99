"""Harness State Augmentation (HSA): change what the model *sees*, keep what the task *is*.

Five operator families perturb an in-memory harness — skill identifiers, skill content, tool
definitions, the system prompt, hooks — with seeds and records (:mod:`.operators`); variants
carry manifests with their surface <-> key maps (:mod:`.variants`, :mod:`.manifest`) and are
written as harness folders (:mod:`.writer`); trajectories under variants become TRL-ready
datasets (:mod:`.trajectories`). Training and held-out variants draw from disjoint vocabularies
(:mod:`.vocab`).

>>> from harnessctl.augment import make_variant
>>> v = make_variant(load_harness("harnesses/livecommerce"), seed=1, ops=["tools"])   # doctest: +SKIP
>>> sorted(v.manifest.surface["tools"])[:2]                                         # doctest: +SKIP
['human_handoff', 'order_status']
"""

from .feasibility import feasible_floors
from .manifest import SourceInfo, VariantManifest, read_manifest, surface_map
from .operators import FAMILIES, OPERATORS, OpContext, apply_operator, apply_operators, resolve_operators
from .paraphrase import LexiconParaphraser, Paraphraser
from .paraphrasers import make_paraphraser
from .preview import Preview, preview_variant
from .records import Change, OpRecord
from .trajectories import TrajectorySpec, TrajectorySummary, build_trajectories, chat_template_inputs, plan_pairs
from .variants import Variant, VariantSpec, iter_variants, make_variant
from .vocab import SPLITS, split_of, syllable_inventory, vocabulary
from .writer import WriteResult, write_variants

__all__ = [
    "Change",
    "FAMILIES",
    "LexiconParaphraser",
    "OPERATORS",
    "OpContext",
    "OpRecord",
    "Paraphraser",
    "Preview",
    "SPLITS",
    "SourceInfo",
    "TrajectorySpec",
    "TrajectorySummary",
    "Variant",
    "VariantManifest",
    "VariantSpec",
    "WriteResult",
    "apply_operator",
    "apply_operators",
    "build_trajectories",
    "chat_template_inputs",
    "feasible_floors",
    "iter_variants",
    "make_paraphraser",
    "make_variant",
    "plan_pairs",
    "preview_variant",
    "read_manifest",
    "resolve_operators",
    "split_of",
    "surface_map",
    "syllable_inventory",
    "vocabulary",
    "write_variants",
]
