"""Constraints bind the model's own reply, every fault kind is real, and the scorer passes and
fails what the oracle-built probes say it must."""

from __future__ import annotations

import json

import pytest

from harnessctl.models.scripted import ScriptedModel
from harnessctl.runtime import run_episode
from harnessctl.runtime.environment import MalformedResult, ToolError, ToolTimeout
from harnessctl.sim import (
    OracleModel,
    World,
    case_from_query,
    generate_cases,
    score_episode,
)
from harnessctl.sim.oracle import OracleBlindModel
from harnessctl.sim.probes import probe_table, tightened
from harnessctl.sim.task import FAULT_KINDS, INTENTS, PASS_THRESHOLD


def call(tool: str, **args) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


LOAD_PRICE = call("load_skill", name="explain_price")
FETCH = call("get_product_details", product_id="P001") + call("get_promotions", product_id="P001")
GOOD = "Glow Serum is $18.99 live, code BEAUTY15 gives 15% off!"


@pytest.fixture(scope="module")
def price_case():
    return case_from_query("how much is the one on screen?", "P001")


def scored(harness, case, script):
    rec = run_episode(harness, case, ScriptedModel(script))
    return rec, score_episode(rec, case)


# -- constraints bind ---------------------------------------------------------------------------


def test_a_reply_the_guard_had_to_truncate_fails_though_the_viewer_saw_a_short_one(shipped, price_case):
    padded = GOOD + " Everyone in the chat keeps asking about it tonight, it is light and smells lovely 🎉🎉"
    rec, b = scored(shipped, price_case, [LOAD_PRICE, FETCH, padded])
    assert len(rec.reply) <= 120 < len(rec.raw_reply)  # the guard protected the viewer
    assert {"over_length", "too_many_emojis"} <= set(b.failures)
    assert not b.passed
    # ... and the conduct component still grades by degree, for RL shaping.
    assert b.constraints == 0.25 and b.correctness == 1.0


def test_each_broken_constraint_fails_the_case_alone(shipped, price_case):
    too_long = GOOD + " It is light, it smells lovely, and everyone in the chat asks about it tonight!"
    _, b = scored(shipped, price_case, [LOAD_PRICE, FETCH, too_long])
    assert b.failures == ["over_length"] and b.total >= PASS_THRESHOLD and not b.passed
    _, b = scored(shipped, price_case, [LOAD_PRICE, FETCH, "Glow Serum is $18.99 live, code BEAUTY15 🎉🔥"])
    assert b.failures == ["too_many_emojis"] and not b.passed
    _, b = scored(shipped, price_case, [LOAD_PRICE, FETCH, GOOD + " Guaranteed results!"])
    assert "banned_phrase:guaranteed results" in b.failures and not b.passed


def test_a_reply_a_revise_guard_sent_back_fails_though_the_revision_was_right(shipped, price_case):
    import copy

    h = copy.deepcopy(shipped)
    next(g for g in h.hooks.guards if g.type == "max_chars").action = "revise"
    too_long = GOOD + " It is light, it smells lovely, and everyone in the chat asks about it tonight!"
    rec, b = scored(h, price_case, [LOAD_PRICE, FETCH, too_long, GOOD])
    assert rec.reply == GOOD and any(e.get("action") == "revise" for e in rec.guard_events)
    assert "guard_revise:max_chars" in b.failures and not b.passed


def test_going_over_the_tool_call_budget_fails_the_case(shipped, price_case):
    extra = call("check_stock", product_id="P001") + call("check_stock", product_id="P002")
    rec, b = scored(shipped, price_case, [LOAD_PRICE, FETCH + extra, GOOD])
    assert any(s.error == "budget" for s in rec.tool_steps)
    assert "over_tool_budget" in b.failures and not b.passed


def test_failure_entries_name_kind_component_and_harness_element(shipped, price_case):
    _, b = scored(
        shipped,
        price_case,
        [FETCH, GOOD + " Everyone in the chat keeps asking about it tonight, so grab it while you can!"],
    )
    entries = {e["kind"]: e for e in b.details["failure_entries"]}
    assert entries["skipped_skill"]["element"] == {"type": "skill", "key": "price_promo"}
    assert entries["skipped_skill"]["component"] == "skill_selection" and not entries["skipped_skill"]["hard"]
    assert entries["over_length"]["element"] == {"type": "constraint", "key": "max_reply_chars"}
    assert entries["over_length"]["hard"] is True
    _, b = scored(
        shipped, price_case, [LOAD_PRICE, call("get_product_details", product_id="P001"), "Glow Serum is $18.99 live!"]
    )
    missing = [e for e in b.details["failure_entries"] if e["kind"] == "missing_call"]
    assert missing[0]["element"] == {"type": "tool", "key": "promotions"}
    fact = next(e for e in b.details["failure_entries"] if e["kind"] == "missing_fact")
    assert fact["element"] == {"type": "tool", "key": "promotions"} and fact["detail"] == "BEAUTY15"
    assert fact["rule"] == {"skill": "price_promo", "key": "check_deals"}


def test_every_rule_the_task_spec_names_is_a_rule_of_the_intents_skill(shipped):
    from harnessctl.sim.task import FACT_RULES, INTENT_SKILL

    for intent, rules in FACT_RULES.items():
        keys = {r.key for r in shipped.skill(INTENT_SKILL[intent]).rules}
        assert set(rules.values()) <= keys, (intent, set(rules.values()) - keys)


# -- every fault is real ------------------------------------------------------------------------


STOCK_ARGS = {"product_id": "P021"}


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_changes_what_the_tool_returns(kind):
    case = generate_cases(1, seed=0, intents=["stock"])[0]
    case.faults = {"stock_check": [kind]}
    world = World(case=case)
    clean = World().call("sim.get_stock", STOCK_ARGS, tool_key="stock_check")
    raised = {"error": ToolError, "timeout": ToolTimeout, "malformed": MalformedResult}
    if kind in raised:
        with pytest.raises(raised[kind]):
            world.call("sim.get_stock", STOCK_ARGS, tool_key="stock_check")
    else:
        got = world.call("sim.get_stock", STOCK_ARGS, tool_key="stock_check")
        assert got != clean
        if kind == "empty":
            assert got == {}
        else:  # partial: fields missing or lists cut short, and named as such
            assert got["incomplete"] and got["product_id"] == clean["product_id"]
            assert set(got) - {"incomplete"} < set(clean) or len(got["variants"]) < len(clean["variants"])
    # The next call is clean again: the plan named one faulty call.
    assert world.call("sim.get_stock", STOCK_ARGS, tool_key="stock_check") == clean


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_the_oracle_handles_every_fault_kind_as_the_hooks_say(shipped, kind):
    cases = generate_cases(2 * len(INTENTS), seed=11, faults={kind: 1.0})
    faulty = [c for c in cases if c.faults]
    assert len(faulty) >= 20
    for case in faulty:
        b = score_episode(run_episode(shipped, case, OracleModel()), case)
        assert b.passed, (case.id, case.faults, b.failures)


def test_a_partial_result_never_becomes_an_invented_number(shipped):
    """Under a partial stock result (the total gone, the variant list cut), the oracle says it
    will check instead of summing what is left; a model that sums it invents a number."""
    case = case_from_query("how many left??", "P021")
    case.faults = {"stock_check": ["partial"] * 4}
    rec = run_episode(shipped, case, OracleModel())
    b = score_episode(rec, case)
    assert b.passed and "check" in rec.reply.lower()
    partial = next(s.result for s in rec.tool_steps if s.key == "stock_check")
    assert "total" in partial["incomplete"]
    summed = sum(v["stock"] for v in partial["variants"])
    script = [
        call("load_skill", name="check_stock_and_size"),
        call("check_stock", product_id="P021"),
        f"Only {summed} left!",
    ]
    _, bad = scored(shipped, case, script)
    assert f"hallucinated_number:{summed}" in bad.failures and not bad.passed


# -- the oracle-built probes --------------------------------------------------------------------


def test_the_probes_land_where_a_trustworthy_scorer_puts_them(shipped):
    cases = generate_cases(150, seed=3, messages="eval")
    rates = probe_table(cases, shipped)
    assert rates["oracle"] == 100.0
    assert rates["negated"] <= 3.0
    assert rates["reworded"] >= 97.0
    assert rates["padded"] <= 3.0
    assert rates["blind_tightened"] <= 40.0  # only the cases its replies happen to fit


def test_the_harness_blind_reference_reads_only_its_own_harness(shipped, price_case):
    blind = OracleBlindModel(shipped)
    b = score_episode(run_episode(shipped, price_case, blind.for_episode(price_case, shipped)), price_case)
    assert b.passed  # under the harness it memorised it is the oracle
    tight = tightened(shipped)
    rec = run_episode(tight, price_case, blind.for_episode(price_case, tight))
    assert len(rec.raw_reply) > 60 and not score_episode(rec, price_case).passed
    rec = run_episode(tight, price_case, OracleModel().for_episode(price_case, tight))
    assert len(rec.raw_reply) <= 60 and score_episode(rec, price_case).passed
