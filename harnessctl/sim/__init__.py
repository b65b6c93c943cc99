"""The live-stream world: catalog, viewers' cases, tool backends with faults, the oracle policy
and the rubric that scores an episode; one live turn (:mod:`~harnessctl.sim.live`). Importing it
registers the ``oracle`` and ``oracle-blind`` model strings (:mod:`~harnessctl.sim.model_strings`),
the ``sim.*`` tool backends (:mod:`~harnessctl.sim.backends`) and the oracle's conversations as a
tiny-model corpus source (:mod:`~harnessctl.sim.corpus`).

>>> from harnessctl.harness import load_harness
>>> from harnessctl.runtime import run_episode
>>> from harnessctl.sim import OracleModel, generate_cases, score_episode
>>> h = load_harness("harnesses/livecommerce")                     # doctest: +SKIP
>>> case = generate_cases(1, seed=0)[0]                             # doctest: +SKIP
>>> score_episode(run_episode(h, case, OracleModel()), case).total  # doctest: +SKIP
1.0
"""

from .backends import SIM_BACKENDS
from .case import Case, CaseContext, Expectation, ExpectedCall
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
from .corpus import oracle_conversations
from .meaning import fact_kind, states
from .model_strings import ORACLE_BLIND, blind_parts, is_oracle_blind
from .oracle import OracleBlindModel, OracleModel, OraclePolicy
from .scorer import (
    HARD_FAILURES,
    WEIGHTS,
    ScoreBreakdown,
    failure_entries,
    score_episode,
)
from .task import FAULT_KINDS, PASS_THRESHOLD, RETRY_TRIGGERS, TaskCall, task_calls
from .world import World

__all__ = [
    "FAULT_KINDS",
    "HARD_FAILURES",
    "INTENTS",
    "INTENT_SKILL",
    "PASS_THRESHOLD",
    "RETRY_TRIGGERS",
    "SIM_BACKENDS",
    "SKILL_FALLBACKS",
    "WEIGHTS",
    "Case",
    "CaseContext",
    "Catalog",
    "CatalogError",
    "Expectation",
    "ExpectedCall",
    "ORACLE_BLIND",
    "OracleBlindModel",
    "OracleModel",
    "OraclePolicy",
    "ScoreBreakdown",
    "TaskCall",
    "World",
    "blind_parts",
    "case_from_query",
    "classify_intent",
    "expectation_for",
    "fact_kind",
    "failure_entries",
    "generate_cases",
    "import_catalog",
    "import_query_log",
    "is_oracle_blind",
    "load_catalog",
    "oracle_conversations",
    "score_episode",
    "states",
    "task_calls",
]
