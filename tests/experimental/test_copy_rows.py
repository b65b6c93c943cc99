"""The wing's copy corpus of stage 0 (copy and pick rows): answers only copying predicts, drawn
in the general corpus's stream, and the recorded corpora reproduced draw for draw."""

from __future__ import annotations

import json
import random
import re

import pytest

from harnessctl.experimental.copy_rows import GUIDES, copy_corpus, parse_copy_mix, pick_row
from trainer.data import token_lengths


def test_copy_rows_can_only_be_answered_by_copying_from_the_conversation(tiny_model_path):
    from transformers import AutoTokenizer

    from harnessctl.experimental.copy_rows import random_code
    from trainer.data import check_row

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    rows = [r for r in copy_corpus(400, seed=2, share=0.5) if r["meta"]["kind"] == "copy"]
    assert {r["meta"]["copy"] for r in rows} == {"echo", "lookup", "number", "tool"}
    for r in rows:
        context = " ".join(str(m.get("content", "")) for m in r["messages"][:-1])
        final = r["messages"][-1]["content"]
        copied = re.findall(r"[A-Z]+-?\d{2,}|\d+", final)
        assert copied and all(c in context for c in copied), r  # every code or number comes from the context
        check_row(r, "row")
        assert token_lengths([check_row(r, "row")], tokenizer)[0] < 512
    # Drawn fresh per row: a model cannot learn the answers by heart.
    assert len({random_code(random.Random(i)) for i in range(200)}) > 190


def test_a_copy_mix_draws_only_the_kinds_it_weights_and_the_default_mix_keeps_the_copy_corpus_unchanged():
    from trainer.common import text_hash

    rows = copy_corpus(400, seed=1, share=1.0, weights=parse_copy_mix("lookup=3,tool=1"))
    kinds = [r["meta"]["copy"] for r in rows]
    assert set(kinds) == {"lookup", "tool"} and kinds.count("lookup") > 2 * kinds.count("tool")
    # The hash the copying base's last piece recorded (9,600 rows, seed 4, half copy rows): a base
    # trained before copy_mix existed is reproduced by the default.
    default = copy_corpus(9600, seed=4, share=0.5, weights=parse_copy_mix(""))
    assert text_hash(json.dumps(default, sort_keys=True)) == (
        "9ad89dc531e233b1eaad36dabe2cbee27823e78eaf3a44924e45d315d740b1b4"
    )


def test_pick_rows_name_a_fresh_guide_that_only_the_listing_identifies(tiny_model_path):
    from transformers import AutoTokenizer

    from trainer.data import check_row

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    rows = copy_corpus(300, seed=3, share=1.0, weights=parse_copy_mix("pick=1"))
    assert {r["meta"]["copy"] for r in rows} == {"pick"}
    requests = {req: desc for desc, reqs in GUIDES for req in reqs}
    held_out = {reqs[-1] for _desc, reqs in GUIDES}
    answers = set()
    for r in rows:
        system, user, call = r["messages"]
        name = call["tool_calls"][0]["function"]["arguments"]["name"]
        assert call["tool_calls"][0]["function"]["name"] == r["tools"][0]["function"]["name"]
        assert r["tools"][0]["function"]["parameters"]["properties"]["name"]["enum"].count(name) == 1
        # The one listing line that holds the asked guide's description holds the name called.
        line = next(x for x in system["content"].splitlines() if requests[user["content"]] in x)
        assert name in line and line.index(requests[user["content"]]) < line.index(name)
        assert call["content"] == f"<think>{line.lstrip('-* ')}</think>"  # the line quoted, then the call
        assert user["content"] not in held_out  # the probe's requests stay out of the corpus
        assert token_lengths([check_row(r, "row")], tokenizer)[0] < 512
        answers.add(name)
    assert len(answers) > 280  # drawn fresh per row: no name to learn by heart
    probe_row = pick_row(random.Random(0), held_out=True)
    assert probe_row["messages"][1]["content"] in held_out


def test_a_copy_share_draws_copy_rows_among_the_general_ones_and_a_wrong_one_is_refused():
    with_copies = copy_corpus(300, seed=0, share=0.3)
    assert 60 < sum(r["meta"]["kind"] == "copy" for r in with_copies) < 120
    with pytest.raises(ValueError, match="copy_share"):
        copy_corpus(3, share=1.5)
