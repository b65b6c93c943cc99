"""A fact counts only where its clause asserts it: negated, questioned, retracted or contradicted
facts fail whatever the negator, rewordings (idioms with a negator in them included) pass, and a
negative fact is stated by its core negated once. Measured on the frozen polarity set, on phrasings
written here by family, and on the oracle's own replies rewritten in one place (tool calls
untouched)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harnessctl.eval.suites import load_suite
from harnessctl.harness import load_harness
from harnessctl.runtime import run_episode
from harnessctl.sim.meaning import SOLD_OUT, fact_kind, states
from harnessctl.sim.probes import ReplyProbe
from harnessctl.sim.scorer import score_episode
from harnessctl.sim.task import INTENTS

ROOT = Path(__file__).resolve().parents[2]
POLARITY = Path(__file__).parent / "data" / "polarity_replies.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in POLARITY.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_correct(row: dict) -> bool:
    subjects = row.get("subjects") or {}

    def said(fact: str) -> bool:
        return states(
            fact, row["reply"], subject=subjects.get(fact), others=list(subjects.values()), question=row.get("query")
        )

    return all(said(f) for f in row["facts"]) and all(any(said(f) for f in g) for g in row["any_facts"])


def test_the_polarity_set_has_300_replies_from_real_cases_both_ways_for_every_intent():
    rows = _rows()
    assert len(rows) >= 300 and len({r["id"] for r in rows}) == len(rows)
    for intent in INTENTS:
        assert {r["label"] for r in rows if r["intent"] == intent} == {"correct", "wrong"}, intent
    cases = {i.case.id: i.case for i in load_suite("livestream", ROOT / "evals")}
    for r in rows:
        case = cases[r["case"]]
        assert (r["facts"], r["query"], r["intent"]) == (list(case.expect.facts), case.query, case.intent), r["id"]


def test_the_scorer_reads_at_least_97_percent_of_the_polarity_set_right_on_each_side():
    rows = _rows()
    for label in ("correct", "wrong"):
        side = [r for r in rows if r["label"] == label]
        right = sum(judged_correct(r) == (label == "correct") for r in side)
        assert right / len(side) >= 0.97, (label, right, len(side))


# Written by family, with products and values of their own.
NEGATED = [
    # a negated auxiliary or modal, after the fact or before it
    ("MUGS10", "Code MUGS10 doesn't take anything off today."),
    ("$8.00 off", "Sorry, SPRING8 won't give you $8.00 off on this one."),
    ("HT4417", "Ticket HT4417 has not been opened, I'm afraid."),
    ("12 days", "You can't send the Desk Fan back within 12 days."),
    ("size XL", "I wouldn't recommend size XL at 170 cm."),
    # "not" before a state or a participle
    ("delivered", "Your parcel LM100200 is not delivered yet."),
    ("dispatched" and "shipped", "Order LM300400 was not dispatched today."),
    # never, no longer, without, fails to, unable to, neither
    ("$24.50", "The Kettle was never $24.50, that's a typo."),
    ("in stock", "Teal is no longer in stock."),
    ("$3.50", "It ships without the $3.50 fee you saw."),
    ("free shipping", "This order fails to qualify for free shipping."),
    ("HT5020", "We are unable to raise ticket HT5020 right now."),
    ("COZY20", "Neither COZY20 nor any other code works here."),
    # a determiner "no" on the fact's own noun phrase
    ("$6.40", "There's no $6.40 deal on the Lunch Box."),
    ("@kai_m", "No @kai_m here yet, hi everyone!"),
    # a verbless tail carrying on a negated promise
    ("HT7788", "Someone will not reach out to you today, ticket HT7788."),
    # asked, not said
    ("$31.00", "Could the Blender be $31.00? I'd need to look."),
    ("size S", "Size S, maybe? Not sure at all."),
    ("4-6 days", "Does it take 4-6 days to the Coast?"),
    # taken back
    ("$12.25", "The Tote is $12.25. Oh wait, scratch that, it's full price today."),
    ("HT9001", "Ticket HT9001 is open, but it's been closed already."),
    ("7 left", "Navy had 7 left yesterday, but none now."),
    # a negative fact negated again, or its opposite said
    ("not a medicine", "I can't say the Balm is not a medicine."),
    ("not a medical device", "The Massager is a medical device, not a toy."),
    ("sold out", "Olive isn't sold out at all!"),
]

STATED = [
    # a negator elsewhere, or one that negates nothing said
    ("$14.20", "No worries, the Candle is $14.20 live!"),
    ("$14.20", "You can't beat $14.20 for the Candle."),
    ("SAVE7", "Don't forget SAVE7 at checkout!"),
    ("9 left", "Only 9 left, don't wait!"),
    ("size M", "At 166 cm, no need to size up: size M fits."),
    ("HT3131", "Ticket HT3131 is open, no need to do anything else."),
    ("$5.25", "No code on the Socks today, but they're $5.25 live."),
    ("12 days", "You have 12 days to return the Desk Fan, as long as it isn't used."),
    ("shipped", "Order LM555000 shipped, it won't be long now."),
    # a negated ending: it lasts
    ("18:45", "The deal doesn't end until 18:45!"),
    ("Jun 20", "The code won't expire before June 20."),
    # an offer, not a doubt
    ("Travel Mug", "Want to hear about the Travel Mug instead?"),
    # a leading No that answers the question the right way
    ("in stock", "No, teal is in stock!", "is teal sold out?"),
    ("out for delivery", "No, LM700800 is out for delivery today.", "has LM700800 been delivered?"),
    # a negative fact reworded
    ("not a medicine", "The Balm isn't a medicine, please ask a doctor."),
    ("not a medicine", "It's a cosmetic and no medicine."),
    ("not intended to treat", "The Tea is not intended to treat any condition."),
    ("sold out", "Olive is out of stock, sorry!"),
]

CONTRADICTED = [
    # a leading No against a question that asked for the fact itself
    ("in stock", "No, teal is in stock!", "is teal still available?"),
    ("$14.20", "No, the Candle is $14.20.", "how much is the candle?"),
    ("delivered", "Nope, LM700800 was delivered on Monday.", "was LM700800 delivered?"),
]


@pytest.mark.parametrize(("fact", "reply"), NEGATED)
def test_a_fact_in_a_negated_questioned_or_retracted_clause_is_not_stated(fact, reply):
    assert not states(fact, reply), (fact_kind(fact), reply)


@pytest.mark.parametrize("row", STATED, ids=[r[1][:40] for r in STATED])
def test_a_rewording_with_a_negator_that_negates_nothing_said_is_stated(row):
    fact, reply, question = (*row, None)[:3]
    assert states(fact, reply, question=question), (fact_kind(fact), reply)


@pytest.mark.parametrize(("fact", "reply", "question"), CONTRADICTED)
def test_a_leading_no_that_contradicts_the_answer_is_not_stated(fact, reply, question):
    assert not states(fact, reply, question=question), reply


# -- the oracle's replies, changed in one place -------------------------------------------------

_NEGATED_VERBS = [
    (" is ", " is not "),
    (" was ", " was not "),
    (" will ", " will not "),
    (" can ", " cannot "),
    (" takes ", " does not take "),
    (" gives ", " does not give "),
]


def _fact_sentence(reply: str, case) -> tuple[int, int] | None:
    facts = [f for f in case.expect.facts if f.lower() in reply.lower()]
    if not facts:
        return None
    at = reply.lower().index(facts[0].lower())
    starts = [0] + [m.end() for m in re.finditer(r"[.!?]\s", reply) if m.end() <= at]
    end = re.search(r"[.!?](\s|$)", reply[at:])
    return starts[-1], at + (end.end() if end else len(reply) - at)


def negate_verb(reply: str, case) -> str:
    """The first verb of the sentence that carries the first fact, negated."""
    span = _fact_sentence(reply, case)
    if span is None:
        return reply
    a, b = span
    for old, new in _NEGATED_VERBS:
        if old in reply[a:b]:
            return reply[:a] + reply[a:b].replace(old, new, 1) + reply[b:]
    return reply


def question_it(reply: str, case) -> str:
    span = _fact_sentence(reply, case)
    if span is None:
        return reply
    a, b = span
    asked = "Is it true that " + reply[a:b].strip().rstrip(".!?") + "?"
    return (reply[:a] + asked + " " + reply[b:]).strip()


def lead_with_no(reply: str, case) -> str:
    """ "No, " before the answer ("Yes, X is in stock!" -> "No, X is in stock!"); a reply that
    already opens with a refusal ("No coupon on X, but ...") is left alone."""
    if reply.startswith("No "):
        return reply
    return "No, " + re.sub(r"^Yes,\s*", "", reply)


def retract(reply: str, case) -> str:
    return reply + " Sorry, scratch that, I was wrong."


def with_idioms(reply: str, case) -> str:
    return "No worries! " + reply.replace("Hurry,", "Don't wait,") + " Don't miss it!"


@pytest.fixture(scope="module")
def livestream():
    harness = load_harness(ROOT / "harnesses" / "livecommerce")
    cases = [i.case for i in load_suite("livestream", ROOT / "evals")]
    return harness, cases


def _facts_missed(harness, cases, rewrite) -> tuple[int, int]:
    """(changed replies whose facts the scorer found missing, changed replies). A rewrite the
    reply-length guard would cut short is left out: the cut, not the rewrite, would be scored."""
    missed = changed = 0
    probe = ReplyProbe("family", rewrite)
    limit = int(harness.constraint("max_reply_chars", 120) or 120)
    for case in cases:
        plain = run_episode(harness, case, probe.inner.for_episode(case, harness)).reply or ""
        new = rewrite(plain, case)
        if new == plain or len(new) > limit:
            continue
        rec = run_episode(harness, case, probe.for_episode(case, harness))
        changed += 1
        missed += any(f.startswith("missing_fact") for f in score_episode(rec, case).failures)
    return missed, changed


def _positive(case) -> bool:
    """Facts that are all positive and all different (a price said twice survives one negation)."""
    facts = list(case.expect.facts) + [f for g in case.expect.any_facts for f in g]
    distinct = len(set(case.expect.facts)) == len(case.expect.facts)
    negative = any(f.lower().startswith(("not ", "no ")) or f.lower() == "sold out" for f in facts)
    return bool(case.expect.facts) and distinct and not negative


@pytest.mark.parametrize("rewrite", [negate_verb, question_it, retract], ids=lambda f: f.__name__)
def test_the_oracle_reply_negated_questioned_or_retracted_in_one_place_loses_its_facts(livestream, rewrite):
    harness, cases = livestream
    chosen = [c for c in cases if _positive(c)] if rewrite is negate_verb else [c for c in cases if c.expect.facts]
    missed, changed = _facts_missed(harness, chosen, rewrite)
    assert changed >= 0.3 * len(chosen)
    assert missed == changed, f"{changed - missed} of {changed} still pass"


def test_a_leading_no_on_the_oracle_answer_loses_its_facts_unless_the_viewer_asked_the_opposite(livestream):
    harness, cases = livestream
    answers = ("price", "promotion", "stock", "shipping", "returns", "flash_sale", "size_advice", "comparison")
    asked_opposite = [c for c in cases if c.intent == "stock" and any(p in c.query.lower() for p in SOLD_OUT)]
    plain = [c for c in cases if c.intent in answers and _positive(c) and c not in asked_opposite]
    missed, changed = _facts_missed(harness, plain, lead_with_no)
    assert changed >= 0.8 * len(plain) and missed == changed
    in_stock = [c for c in asked_opposite if c.expect.facts == ["in stock"]]
    missed, changed = _facts_missed(harness, in_stock, lead_with_no)
    assert changed and missed == 0  # "is it sold out?" — "No, it is in stock!"


def test_the_oracle_reply_with_idioms_that_carry_a_negator_keeps_its_facts(livestream):
    harness, cases = livestream
    missed, changed = _facts_missed(harness, cases, with_idioms)
    assert changed >= 0.8 * len(cases) and missed == 0
