"""The live-stream world: catalog, viewers' cases, tool backends with faults, the oracle policy
and the rubric that scores an episode.

>>> from harnessctl.harness import load_harness
>>> from harnessctl.runtime import run_episode
>>> from harnessctl.sim import OracleModel, generate_cases, score_episode
>>> h = load_harness("harnesses/livecommerce")                     # doctest: +SKIP
>>> case = generate_cases(1, seed=0)[0]                             # doctest: +SKIP
>>> score_episode(run_episode(h, case, OracleModel()), case).total  # doctest: +SKIP
1.0
"""

from .case import Case, CaseContext, ExpectedCall, Expectation
from .cases import (
    INTENT_SKILL,
    INTENTS,
    SKILL_FALLBACKS,
    case_from_query,
    classify_intent,
    expectation_for,
    generate_cases,
    import_query_log,
)
from .catalog import Catalog, CatalogError, import_catalog, load_catalog
from .oracle import OracleModel, OraclePolicy
from .scorer import HARD_FAILURES, PASS_THRESHOLD, WEIGHTS, ScoreBreakdown, score_episode
from .world import FAULT_KINDS, World

__all__ = [
    "Case", "CaseContext", "Catalog", "CatalogError", "ExpectedCall", "Expectation", "FAULT_KINDS",
    "HARD_FAILURES", "INTENTS", "INTENT_SKILL", "OracleModel", "OraclePolicy", "PASS_THRESHOLD",
    "SKILL_FALLBACKS", "ScoreBreakdown", "WEIGHTS", "World", "case_from_query", "classify_intent",
    "expectation_for", "generate_cases", "import_catalog", "import_query_log", "load_catalog",
    "score_episode",
]
