"""The evolution suite: a case for every element the diff lists, none for untouched ones."""

from __future__ import annotations

import pytest

from harnessctl.eval.suites import load_suite
from harnessctl.harness import Rule
from harnessctl.harness.diff import diff_harnesses
from harnessctl.loop.evolution import (
    build_evolution_suite,
    element_path,
    evolution_paths,
)

from .conftest import EVALS


@pytest.fixture(scope="module")
def pool():
    return load_suite("livestream", EVALS) + load_suite("robustness", EVALS)


def _edited(h):
    c = h.copy()
    c.tool("promotions").name = "list_deals"  # renamed tool
    c.skill("flash_sale").name = "announce_drop"  # renamed skill
    rule = next(r for r in c.skill("price_promo").rules if r.key == "check_deals")
    rule.text = "Always call {{ tool.promotions }} and name the single best coupon with its code."  # reworded rule
    c.skill("stock_size").rules.append(Rule("no_guess", "Never guess a size; ask for height."))  # a new rule
    c.prompt.constraints["max_reply_chars"].value = 100  # a lower reply limit
    c.prompt.blocks.insert(0, c.prompt.blocks.pop(4))  # the compliance block moved first
    c.hooks.retry.max_attempts = 3  # a changed hook
    c.hooks.guards[1].phrases = [*c.hooks.guards[1].phrases, "risk-free"]  # a new banned phrase
    return c


def test_every_changed_element_has_cases_and_untouched_ones_have_none(livecommerce, pool):
    cand = _edited(livecommerce)
    diff = diff_harnesses(livecommerce, cand)
    changed = {element_path(c) for c in diff.changes}
    assert changed == {
        "tool:promotions",
        "skill:flash_sale",
        "rule:price_promo.check_deals",
        "rule:stock_size.no_guess",
        "constraint:max_reply_chars",
        "prompt_block:compliance",
        "hook:retry",
        "guard:banned_phrases",
    }
    suite = build_evolution_suite(diff, pool, per_element=3, harness=cand)
    assert set(suite.coverage) == changed and suite.uncovered == {}
    assert all(1 <= len(ids) <= 3 for ids in suite.coverage.values())
    tagged = {p for item in suite.items for p in evolution_paths(item)}
    assert tagged == changed  # nothing for an element the edit did not touch
    by_path = {p: [i for i in suite.items if p in evolution_paths(i)] for p in changed}
    # ... and each case really exercises its element
    assert all(any(c.tool == "promotions" for c in i.case.expect.calls) for i in by_path["tool:promotions"])
    assert all(i.case.expect.skill == "flash_sale" for i in by_path["skill:flash_sale"])
    assert all(i.case.expect.skill == "price_promo" for i in by_path["rule:price_promo.check_deals"])
    assert all(i.case.expect.skill == "stock_size" for i in by_path["rule:stock_size.no_guess"])
    assert all(i.case.faults for i in by_path["hook:retry"])
    assert all(i.case.expect.forbidden for i in by_path["guard:banned_phrases"])
    assert len({i.id for i in suite.items}) == len(suite.items) and all(i.suite == "evolution" for i in suite.items)


def test_an_unchanged_harness_gives_an_empty_suite(livecommerce, pool):
    suite = build_evolution_suite(diff_harnesses(livecommerce, livecommerce.copy()), pool)
    assert suite.items == [] and suite.coverage == {}


def test_a_removed_or_never_asked_for_element_is_listed_as_uncovered_with_the_reason(livecommerce, pool):
    cand = livecommerce.copy()
    cand.tools = [t for t in cand.tools if t.key != "return_policy"]
    for s in cand.skills:
        s.tools = [t for t in s.tools if t != "return_policy"]
    new = cand.tool("stock_check")
    from dataclasses import replace

    cand.tools.append(replace(new, key="gift_wrap", name="wrap_gift", description="wrap a gift"))
    diff = diff_harnesses(livecommerce, cand)
    suite = build_evolution_suite(diff, pool, harness=cand)
    assert suite.uncovered["tool:return_policy"].startswith("removed")
    assert suite.uncovered["tool:gift_wrap"].startswith("added")
    assert "skill:shipping_returns" in suite.coverage  # its tool list changed: its cases run
