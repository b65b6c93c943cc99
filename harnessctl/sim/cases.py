"""Viewers' comments as cases: what they ask, in their words, and what a correct answer needs.

:func:`generate_cases` writes varied comments for 15 intents (several templates each, viewer
handles, casual spelling, emoji, "the one on screen", short earlier turns) and attaches, by
stable key, the skill to load, the tool calls to make, the facts the reply must contain
(formatted as :mod:`harnessctl.sim.facts` formats them) and the claims it must not make.
:func:`case_from_query` does the same for one free-form comment through a keyword intent
classifier, and :func:`import_query_log` for a file of real viewer comments.

>>> cases = generate_cases(30, seed=1)
>>> len(cases), len({c.intent for c in cases})
(30, 15)
>>> c = case_from_query("how much is the one on screen?", "P001", load_catalog())
>>> c.intent, c.expect.skill, [call.tool for call in c.expect.calls], c.expect.facts
('price', 'price_promo', ['product_details', 'promotions'], ['$18.99', 'BEAUTY15'])
"""

from harnessctl.sim.catalog import load_catalog  # noqa: F401 - for the doctest above
from harnessctl.sim.expectations import expectation_for
from harnessctl.sim.generate import feasible_intents, generate_cases
from harnessctl.sim.intents import classify_intent
from harnessctl.sim.querylog import case_from_query, import_query_log
from harnessctl.sim.task import FAULT_KINDS, INTENT_SKILL, INTENTS, SKILL_FALLBACKS
from harnessctl.sim.templates import HANDLES, TEMPLATES, template_split, templates_for

__all__ = [
    "FAULT_KINDS",
    "HANDLES",
    "INTENTS",
    "INTENT_SKILL",
    "SKILL_FALLBACKS",
    "TEMPLATES",
    "case_from_query",
    "classify_intent",
    "expectation_for",
    "feasible_intents",
    "generate_cases",
    "import_query_log",
    "template_split",
    "templates_for",
]
