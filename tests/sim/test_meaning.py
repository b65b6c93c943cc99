"""Facts are read by meaning: any usual wording of the same fact passes, a negated, contradicted
or different one fails — measured on a labelled set of replies across every intent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessctl.sim.meaning import fact_kind, states
from harnessctl.sim.task import INTENTS

LABELLED = Path(__file__).parent / "data" / "labelled_replies.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_correct(row: dict) -> bool:
    """The scorer's verdict on a labelled reply: every fact (and one of each any-of group)
    stated, each of its own product where the row names the products."""
    subjects = row.get("subjects") or {}

    def said(fact: str) -> bool:
        return states(fact, row["reply"], subject=subjects.get(fact), others=list(subjects.values()))

    return all(said(f) for f in row["facts"]) and all(any(said(f) for f in g) for g in row["any_facts"])


def accuracy(rows: list[dict], label: str) -> float:
    side = [r for r in rows if r["label"] == label]
    return sum(judged_correct(r) == (label == "correct") for r in side) / len(side)


def test_the_labelled_set_has_300_replies_both_ways_across_every_intent():
    rows = _rows()
    assert len(rows) >= 300
    for intent in INTENTS:
        labels = {r["label"] for r in rows if r["intent"] == intent}
        assert labels == {"correct", "wrong"}, intent
    assert len({r["id"] for r in rows}) == len(rows)


def test_the_scorer_reads_at_least_97_percent_of_labelled_replies_right_on_each_side():
    rows = _rows()
    assert accuracy(rows, "correct") >= 0.97
    assert accuracy(rows, "wrong") >= 0.97


@pytest.mark.parametrize(
    ("fact", "reply"),
    [
        ("2-4 days", "ships in 2 to 4 days"),
        ("2-4 days", "between two and four business days"),
        ("10% off", "code X takes 10 percent off"),
        ("35 left", "only 35 units left!"),
        ("Jun 15", "expected June 15th"),
        ("Jun 15", "arrives 15 June"),
        ("in stock", "yes, available right now"),
        ("in stock", "it's not sold out"),
        ("sold out", "M isn't available anymore"),
        ("21:00", "until 9pm tonight"),
        ("$19.90", "19.9 dollars live"),
        ("$5.00 off", "save $5 with it"),
        ("size M", "I'd go for M"),
        ("limit 2", "max 2 per viewer"),
        ("shipped", "your order is on its way"),
        ("free shipping", "shipping is free to Central"),
        ("@lily_b", "hi lily_b!"),
        ("order number", "what's your order #?"),
    ],
)
def test_the_same_fact_in_other_words_is_stated(fact, reply):
    assert states(fact, reply), (fact_kind(fact), reply)


@pytest.mark.parametrize(
    ("fact", "reply"),
    [
        ("in stock", "No, it is not in stock."),
        ("in stock", "it's sold out, sorry"),
        ("in stock", "it's no longer available"),
        ("sold out", "M is not sold out"),
        ("$18.99", "It isn't $18.99 anymore"),
        ("$18.99", "It was $18.99 yesterday"),
        ("$18.99", "It's more than $18.99 now"),
        ("$18.99", "Maybe $18.99?"),
        ("BEAUTY15", "BEAUTY15 has expired"),
        ("3 left", "30 left"),
        ("3 left", "13 left"),
        ("2-4 days", "3-5 days"),
        ("2-4 days", "2-4 weeks"),
        ("Jun 15", "June 16"),
        ("21:00", "9am"),
        ("shipped", "it hasn't shipped yet"),
        ("limit 2", "limit 3"),
        ("$9.90", "The flash sale is over, it was $9.90"),
        ("delivered", "it should have been delivered by now but it isn't"),
    ],
)
def test_a_negated_contradicted_or_different_fact_is_not_stated(fact, reply):
    assert not states(fact, reply), (fact_kind(fact), reply)


def test_a_price_said_of_the_other_product_is_not_stated():
    assert states("$7.90", "Toner is $17.90 and Mascara is $7.90", subject="Mascara", others=["Toner", "Mascara"])
    assert not states("$7.90", "Toner is $7.90 and Mascara is $17.90", subject="Mascara", others=["Toner", "Mascara"])
    assert states(
        "$7.90", "$17.90 vs $7.90", subject="Mascara", others=["Toner", "Mascara"]
    )  # no names: nothing to confuse
