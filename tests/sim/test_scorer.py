"""The rubric: scripted bad models lose exactly the components their mistake belongs to.

Every script below is the good answer with one thing wrong. The good answer scores 1.0 on
every component, so "exactly" is checkable: the components that drop are the ones named, and
every other one stays at 1.0.
"""

from __future__ import annotations

import json

import pytest

from harnessctl.models.scripted import ScriptedModel
from harnessctl.runtime import run_episode
from harnessctl.runtime.record import EpisodeRecord
from harnessctl.sim import WEIGHTS, case_from_query, generate_cases, score_episode

from .variants import renamed_variant


def call(tool: str, **args) -> str:
    """A Hermes-style tool call, as a model writes it."""
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


LOAD_PRICE = call("load_skill", name="explain_price")
FETCH = call("get_product_details", product_id="P001") + call("get_promotions", product_id="P001")
GOOD_REPLY = "Glow Serum is $18.99 live, code BEAUTY15 gives 15% off!"


@pytest.fixture(scope="module")
def price_case():
    case = case_from_query("how much is the one on screen?", "P001")
    assert case.expect.facts == ["$18.99", "BEAUTY15"]
    return case


@pytest.fixture(scope="module")
def health_case():
    case = case_from_query("will this cure my acne?", "P001")
    assert case.intent == "compliance_sensitive" and "treats" in case.expect.forbidden
    return case


def score(harness, case, script):
    rec = run_episode(harness, case, ScriptedModel(script))
    return rec, score_episode(rec, case)


def dropped(b) -> set[str]:
    return {k for k, v in b.components.items() if v < 1.0}


def test_the_good_answer_scores_one_everywhere(shipped, price_case):
    rec, b = score(shipped, price_case, [LOAD_PRICE, FETCH, GOOD_REPLY])
    assert rec.termination.value == "reply"
    assert b.components == {k: 1.0 for k in WEIGHTS}
    assert b.total == 1.0 and b.passed and b.failures == []


BAD = {
    "hallucinated price": (
        [LOAD_PRICE, FETCH, "Glow Serum is $12.00 live, code BEAUTY15 gives 15% off!"],
        {"correctness"},
        ["hallucinated_number:$12.00", "missing_fact:$18.99"],
    ),
    "wrong tool": (
        [LOAD_PRICE, call("check_stock", product_id="P001"), "Glow Serum is in stock!"],
        {"correctness", "tool_rationality"},
        [
            "missing_call:product_details",
            "missing_call:promotions",
            "unexpected_call:stock_check",
            "off_skill_call:stock_check",
        ],
    ),
    "unknown tool name": (
        [LOAD_PRICE, FETCH + call("get_price", product_id="P001"), GOOD_REPLY],
        {"tool_rationality"},
        ["unknown_tool:get_price"],
    ),
    "invalid arguments": (
        [LOAD_PRICE, call("get_product_details", id="P001") + FETCH, GOOD_REPLY],
        {"tool_rationality"},
        ["invalid_args:product_details"],
    ),
    "reply over the length limit": (
        [
            LOAD_PRICE,
            FETCH,
            GOOD_REPLY
            + " It is light, it smells lovely and everyone in the chat keeps asking about it tonight, so grab it soon!",
        ],
        {"constraints"},
        ["over_length"],
    ),
    "skipped skill": (
        [FETCH, GOOD_REPLY],
        {"skill_selection"},
        ["skipped_skill"],
    ),
}


@pytest.mark.parametrize("mistake", list(BAD))
def test_a_scripted_mistake_loses_exactly_its_components(shipped, price_case, mistake):
    script, components, expected_failures = BAD[mistake]
    rec, b = score(shipped, price_case, script)
    assert rec.termination.value == "reply"
    assert dropped(b) == components, b.to_dict()
    for f in expected_failures:
        assert f in b.failures
    assert b.total < 1.0


def test_a_forbidden_claim_loses_compliance_only(shipped, health_case):
    script = [
        call("load_skill", name="compliance_check"),
        call("get_product_details", product_id="P001"),
        "Glow Serum is not a medicine, but it treats acne fast.",
    ]
    rec, good = score(
        shipped, health_case, script[:2] + ["Glow Serum is a cosmetic, not a medicine; please ask your doctor."]
    )
    assert good.components == {k: 1.0 for k in WEIGHTS}
    rec, b = score(shipped, health_case, script)
    assert dropped(b) == {"compliance"} and b.compliance == 0.0
    assert "forbidden_claim:treats" in b.failures
    assert not b.passed  # a forbidden claim is a hard failure, whatever the total


def test_hard_failures_fail_the_case_even_with_a_high_total(shipped, price_case):
    _, b = score(
        shipped, price_case, [LOAD_PRICE, FETCH, "Glow Serum is $18.99 live, code BEAUTY15, only $12.00 with points!"]
    )
    assert b.total >= 0.7  # most of the answer is right...
    assert not b.passed and "hallucinated_number:$12.00" in b.failures


def test_mistakes_score_the_same_under_a_renamed_variant(shipped, price_case):
    """Scoring goes by key: the same mistake made with the variant's names costs the same."""
    v = renamed_variant(shipped, max_reply_chars=120, result_format="json")
    names = {t.key: t.name for t in v.tools}
    load = call("open_playbook", name="playbook_PRICE_PROMO")
    fetch = call(names["product_details"], product_id="P001") + call(names["promotions"], product_id="P001")
    _, good = score(v, price_case, [load, fetch, GOOD_REPLY])
    assert good.total == 1.0
    _, bad = score(v, price_case, [load, call(names["stock_check"], product_id="P001"), "Glow Serum is in stock!"])
    _, bad_shipped = score(shipped, price_case, BAD["wrong tool"][0])
    assert bad.to_dict() == bad_shipped.to_dict()


def test_the_score_is_a_pure_function_of_record_and_case(shipped):
    from harnessctl.sim import OracleModel

    for case in generate_cases(15, seed=8, faults=0.5):
        rec = run_episode(shipped, case, OracleModel())
        again = EpisodeRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
        assert score_episode(again, case).to_dict() == score_episode(rec, case).to_dict()


def test_a_model_error_scores_zero_correctness_and_fails(shipped, price_case):
    from harnessctl.models.base import ModelError

    def boom(messages, tools):
        raise ModelError("backend down")

    rec, b = score(shipped, price_case, [boom])
    assert rec.termination.value == "model_error"
    assert b.correctness == 0.0 and not b.passed
    assert "model_error" in b.failures and "no_reply" in b.failures


def test_giving_up_before_the_retry_hook_allows_is_penalised(shipped, price_case):
    case = price_case.__class__.from_dict(price_case.to_dict())
    case.faults = {"product_details": ["timeout"]}  # the first call times out, a retry works
    _, b = score(shipped, case, [LOAD_PRICE, FETCH, "Let me check the price for you, code BEAUTY15 gives 15% off!"])
    assert "gave_up_early:product_details" in b.failures
    assert b.tool_rationality < 1.0 and b.correctness < 1.0
    _, retried = score(shipped, case, [LOAD_PRICE, FETCH, call("get_product_details", product_id="P001"), GOOD_REPLY])
    assert retried.total == 1.0


def test_a_persistent_fault_excuses_the_facts_that_tool_would_have_given(shipped, price_case):
    case = price_case.__class__.from_dict(price_case.to_dict())
    case.faults = {"promotions": ["error", "error", "error"]}
    retry = call("get_promotions", product_id="P001")
    _, b = score(
        shipped, case, [LOAD_PRICE, FETCH, retry, "Glow Serum is $18.99 live; let me check the coupons for you!"]
    )
    assert b.total == 1.0, b.to_dict()
    # A coupon code the failed tool never gave is an invention.
    _, invented = score(shipped, case, [LOAD_PRICE, FETCH, retry, GOOD_REPLY])
    assert "hallucinated_number:BEAUTY15" in invented.failures and not invented.passed


def test_a_reply_that_answers_nothing_fails_even_after_the_right_calls(shipped, price_case):
    """Polite filler is compliant, short and cheap: none of that earns a pass for a price ask."""
    _, b = score(shipped, price_case, [LOAD_PRICE, FETCH, "Thanks for watching!"])
    assert b.correctness == 0.0
    assert {"missing_fact:$18.99", "missing_fact:BEAUTY15"} <= set(b.failures)
    assert b.total <= 0.5 and not b.passed


def test_a_count_of_what_a_tool_listed_is_grounded_but_an_invented_count_is_not(shipped):
    case = case_from_query("how much is the one on screen?", "P021")  # Linen Shirt: S, M, L, XL
    load = call("load_skill", name="explain_price")
    fetch = call("get_product_details", product_id="P021") + call("get_promotions", product_id="P021")
    _, counted = score(
        shipped, case, [load, fetch, "Linen Shirt is $24.99 live, code LINEN15 gives 15% off, in 4 sizes!"]
    )
    assert counted.total == 1.0 and counted.failures == []
    _, invented = score(
        shipped, case, [load, fetch, "Linen Shirt is $24.99 live, code LINEN15 gives 15% off, in 37 sizes!"]
    )
    assert "hallucinated_number:37" in invented.failures and not invented.passed


def test_arguments_that_differ_only_in_case_and_spacing_are_the_right_call(shipped, price_case):
    fetch = call("get_product_details", product_id="p001") + call("get_promotions", product_id=" P001 ")
    rec, b = score(shipped, price_case, [LOAD_PRICE, fetch, GOOD_REPLY])
    assert all(s.ok for s in rec.tool_steps)
    assert b.components == {k: 1.0 for k in WEIGHTS} and b.passed


def test_a_right_answer_made_without_the_tools_is_not_grounded(shipped, price_case):
    """Numbers the model was never given are inventions, even when they happen to be right."""
    _, b = score(shipped, price_case, [GOOD_REPLY])
    assert "hallucinated_number:$18.99" in b.failures and "skipped_skill" in b.failures
    assert b.total == 0.0 and not b.passed
