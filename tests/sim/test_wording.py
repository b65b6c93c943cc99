"""Varied viewer wording for training data: the question stays, the phrasing moves."""

from __future__ import annotations

import random
import re

from harnessctl.sim import generate_cases
from harnessctl.sim.oracle import OracleModel
from harnessctl.sim.templates import TEMPLATES, message_overlap, templates_for
from harnessctl.sim.wording import WORDING_OPERATORS, vary_template

_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def test_a_reworded_template_keeps_every_placeholder_and_still_formats():
    fill = {"this": "this one", "name": "Glow Serum", "other": "Silk Cap", "variant": "red", "region": "west"}
    fill |= {"city": "Austin", "order": "LM123456", "height": 160, "condition": "acne"}
    changed = 0
    for key in TEMPLATES:
        for template in templates_for(key, "train"):
            for seed in range(20):
                varied = vary_template(template, random.Random(seed))
                assert sorted(_PLACEHOLDER.findall(varied)) == sorted(_PLACEHOLDER.findall(template)), varied
                assert varied.format(**fill).strip()
                changed += varied != template
    assert changed > 0.9 * 20 * sum(len(templates_for(k, "train")) for k in TEMPLATES)


def test_no_operator_drops_a_negation_a_pointer_or_a_question_word():
    kept = ("not", "this", "it", "how", "when", "which")
    template = "how long is it not in stock and when is this one back, which size?"
    for name, op in WORDING_OPERATORS.items():
        for seed in range(30):
            words = re.findall(r"[a-z']+", op(template, random.Random(seed)).lower())
            assert all(w in words for w in kept), (name, seed)


def test_varied_cases_are_tagged_keep_their_template_and_the_rest_are_unchanged():
    plain = generate_cases(300, seed=4, messages="train")
    varied = generate_cases(300, seed=4, messages="train", vary_wording=0.5)
    assert [c.id for c in plain] == [c.id for c in varied]
    reworded = [v for v in varied if "varied_wording" in v.tags]
    assert 0.35 * 300 < len(reworded) < 0.65 * 300
    for p, v in zip(plain, varied):
        assert v.template == p.template and v.intent == p.intent and v.slots == p.slots
        if "varied_wording" not in v.tags:
            assert v.query == p.query and v.expect == p.expect
    assert sum(v.query != p.query for p, v in zip(plain, varied)) > 0.9 * len(reworded)
    assert generate_cases(50, seed=4, messages="train", vary_wording=0.0) == plain[:50]


def test_the_oracle_still_solves_every_reworded_case(livecommerce_path):
    from harnessctl.harness.loader import load_harness
    from harnessctl.runtime.loop import run_episode
    from harnessctl.sim.scorer import score_episode

    harness = load_harness(livecommerce_path)
    cases = [c for c in generate_cases(120, seed=9, messages="train", vary_wording=1.0)]
    scores = [score_episode(run_episode(harness, c, OracleModel()), c).total for c in cases]
    assert min(scores) >= 0.99


def test_reworded_training_messages_still_share_nothing_with_the_held_out_ones():
    train = generate_cases(1500, seed=1, messages="train", vary_wording=1.0)
    held_out = generate_cases(600, seed=2, messages="eval")
    overlap = message_overlap(train, held_out)
    assert overlap["verbatim"] == 0 and overlap["templates_shared"] == 0
