"""Generated cases: many intents, varied wording, expectations by key, reproducible."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from harnessctl.sim import (
    INTENT_SKILL,
    INTENTS,
    Case,
    case_from_query,
    classify_intent,
    generate_cases,
    import_query_log,
)


@pytest.fixture(scope="module")
def cases():
    return generate_cases(600, seed=5)


def test_cases_cover_at_least_12_intents_evenly(cases):
    counts = Counter(c.intent for c in cases)
    assert len(INTENTS) >= 12 and set(counts) == set(INTENTS)
    assert max(counts.values()) - min(counts.values()) <= 1


def test_wording_varies(cases):
    by_intent: dict[str, set[str]] = {}
    for c in cases:
        by_intent.setdefault(c.intent, set()).add(c.query)
    assert all(len(queries) >= 5 for queries in by_intent.values())
    tags = Counter(t for c in cases for t in c.tags)
    assert tags["multi_turn"] > 50 and tags["on_screen_ref"] > 20
    assert any(any(ord(ch) > 0x2600 for ch in c.query) for c in cases)  # emoji
    assert len({c.context.viewer["handle"] for c in cases}) >= 20


def test_expectations_are_by_key_of_the_shipped_harness(cases, shipped):
    skills = {s.key for s in shipped.skills}
    tools = {t.key for t in shipped.tools}
    for c in cases:
        assert c.expect.skill == INTENT_SKILL[c.intent] and c.expect.skill in skills
        assert all(call.tool in tools for call in c.expect.calls)
        for fact, source in c.expect.fact_sources.items():
            assert fact in c.expect.facts and source.split("@")[0] in {call.tool for call in c.expect.calls}
    with_facts = {c.intent for c in cases if c.expect.facts}
    assert with_facts >= set(INTENTS) - {"order_status"}


def test_facts_are_written_as_the_reply_should_write_them(cases):
    price = next(c for c in cases if c.intent == "price")
    assert price.expect.facts[0].startswith("$") and len(price.expect.facts[0].split(".")[1]) == 2
    order = next(c for c in cases if c.intent == "order_status" and c.expect.calls)
    assert order.expect.facts[0].startswith("LM")
    flash = next(c for c in cases if c.intent == "flash_sale")
    assert any(f.endswith(" left") for f in flash.expect.facts)


def test_same_seed_same_cases_other_seed_other_cases():
    a = [c.to_dict() for c in generate_cases(80, seed=3, faults=0.3)]
    b = [c.to_dict() for c in generate_cases(80, seed=3, faults=0.3)]
    c = [c.to_dict() for c in generate_cases(80, seed=4, faults=0.3)]
    assert a == b and a != c


def test_cases_round_trip_through_json(cases):
    for c in cases[:50]:
        assert Case.from_dict(json.loads(json.dumps(c.to_dict()))) == c


def test_fault_plans_target_a_needed_tool():
    faulted = [c for c in generate_cases(200, seed=1, faults={"timeout": 0.3, "error": 0.2}) if c.faults]
    assert 60 < len(faulted) < 140
    for c in faulted:
        ((tool, plan),) = c.faults.items()
        assert tool in {call.tool for call in c.expect.calls if call.required}
        assert set(plan) <= {"timeout", "error"} and "fault" in c.tags


def test_the_classifier_reads_generated_comments_as_their_intent(cases):
    agree = sum(classify_intent(c.query) == c.intent for c in cases)
    assert agree >= 0.95 * len(cases)


def test_unknown_intents_and_infeasible_requests_are_refused():
    with pytest.raises(ValueError, match="unknown intent 'haggle'"):
        generate_cases(3, intents=["haggle"])


@pytest.mark.parametrize(
    "query, product, intent, calls, facts",
    [
        ("how much is the one on screen?", "P001", "price", ["product_details", "promotions"], ["$18.99", "BEAUTY15"]),
        ("is M still in stock?", "P021", "stock", ["stock_check"], None),
        ("is size M still in stock?", "P021", "stock", ["stock_check"], None),
        ("I'm 172cm, what size?", "P021", "size_advice", ["product_details", "stock_check"], ["size L"]),
        ("how long to ship to harbor city?", "P001", "shipping", ["shipping_estimate"], ["3-5 days", "$5.99"]),
        ("where is my order lm145304", "P001", "order_status", ["order_status"], ["LM145304", "processing", "Jun 15"]),
        ("my order LM145304 arrived broken", "P001", "complaint", ["order_status", "human_handoff"], None),
        ("Glow Serum vs Cloud Cream?", "P001", "comparison", ["product_details", "product_details"], None),
        ("can I talk to a real person", "P001", "human_request", ["human_handoff"], None),
        ("what's the weather like", "P001", "off_topic", [], ["Glow Serum"]),
    ],
)
def test_free_form_comments_become_cases(query, product, intent, calls, facts):
    c = case_from_query(query, product)
    assert c.intent == intent
    assert [call.tool for call in c.expect.calls] == calls
    if facts is not None:
        assert c.expect.facts == facts


def test_slots_are_read_off_the_words():
    assert case_from_query("is size M still in stock?", "P021").slots["variant"] == "M"
    assert "variant" not in case_from_query("what's left?", "P021").slots  # not size S
    c = case_from_query("ship to Coral Bay?", "P001", viewer={"handle": "@kim88", "region": "north"})
    assert (c.slots["region"], c.expect.calls[0].args["region"]) == ("islands", ["coral bay", "islands"])


def test_a_comparison_names_the_other_product_in_the_context():
    c = case_from_query("Glow Serum vs Cloud Cream?", "P001")
    assert c.context.lineup == {"P004": "Cloud Cream"}
    assert c.expect.calls[1].args == {"product_id": "P004"}


def test_complaints_about_damage_need_a_high_urgency_handoff():
    c = case_from_query("my order LM145304 arrived broken", "P001")
    assert c.expect.calls[-1].args == {"urgency": ["high"]} and c.expect.handoff


def test_real_viewer_logs_become_cases(tmp_path):
    csv_path = tmp_path / "chat.csv"
    csv_path.write_text(
        "comment,product_id,handle,region\nhow much is this?,P002,lily,north\nany coupon code?,P002,,\n",
        encoding="utf-8",
    )
    jsonl_path = tmp_path / "chat.jsonl"
    jsonl_path.write_text(
        '{"text": "track LM145304 pls", "on_screen": "P010"}\n\n{"message": "hi Mia!"}\n', encoding="utf-8"
    )
    a = import_query_log(csv_path)
    b = import_query_log(jsonl_path, product_id="P003")
    assert [(c.id, c.intent) for c in a] == [("chat-2", "price"), ("chat-3", "promotion")]
    assert a[0].context.viewer == {"handle": "@lily", "region": "north"} and a[0].suite == "production"
    assert [(c.id, c.intent, c.context.product_id) for c in b] == [
        ("chat-1", "order_status", "P010"),
        ("chat-3", "greeting", "P003"),
    ]


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("log.csv", "comment,product_id\n,P001\n", "log.csv:2: no comment text"),
        ("log.csv", "comment,product_id\nhi,P999\n", "log.csv:2: field 'product_id': no product 'P999'"),
        ("log.jsonl", '{"text": "hi"}\n{oops\n', "log.jsonl:2: not valid JSON"),
    ],
)
def test_a_bad_log_line_is_named(tmp_path, name, content, fragment):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as e:
        import_query_log(path)
    assert fragment in str(e.value)


@pytest.mark.parametrize(
    "query",
    ["how much is the one on screen? any coupon?", "price? any discount code?", "how much, and is there a promo"],
)
def test_a_comment_that_asks_price_and_coupon_expects_both(query):
    """Both are the price_promo skill's job; its rules say to quote the live-room price."""
    c = case_from_query(query, "P003")
    assert c.intent == "price" and c.slots["asks_coupon"] is True
    assert c.expect.facts == ["$22.99", "BEAUTY15", "15% off", "21:00"]
    assert case_from_query("any coupon for this?", "P003").intent == "promotion"


def test_the_oracle_answers_price_and_coupon_together(shipped, catalog):
    from harnessctl.runtime import run_episode
    from harnessctl.sim import OracleModel, score_episode

    c = case_from_query("how much is the one on screen? any coupon?", "P003", catalog)
    rec = run_episode(shipped, c, OracleModel())
    assert "$22.99" in rec.reply and "BEAUTY15" in rec.reply and "until 21:00" in rec.reply
    assert score_episode(rec, c).total == 1.0
    # Without a coupon the answer says so, next to the price.
    c = next(
        c
        for p in catalog.products
        if len((c := case_from_query("how much? any coupon?", p["id"], catalog)).expect.facts) == 1
    )
    rec = run_episode(shipped, c, OracleModel())
    assert "no coupon" in rec.reply and c.expect.facts[0] in rec.reply
    assert score_episode(rec, c).total == 1.0
