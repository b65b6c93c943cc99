"""IFEval scoring: the checker package decides, strict and loose as the official protocol says,
with no network (sentence splitting works from locally built Punkt parameters)."""

from __future__ import annotations

import json

import pytest

from harnessctl.eval.ifeval import IFEvalCase, accuracy, build_cases, load_official, registry, score_response


def case(iid: str, prompt: str = "Describe the bamboo cutting board.", **kwargs) -> IFEvalCase:
    return IFEvalCase(id=f"t-{iid}", prompt=prompt, instruction_id_list=[iid], kwargs=[kwargs])


# (instruction, kwargs, a compliant response, a non-compliant response)
HAND_WRITTEN = [
    ("punctuation:no_comma", {}, "It is light and it smells of citrus.", "It is light, and it smells of citrus."),
    ("change_case:english_lowercase", {}, "it is light and smells of citrus.", "It is light and smells of citrus."),
    ("change_case:english_capital", {}, "IT IS LIGHT AND SMELLS OF CITRUS.", "IT IS LIGHT and smells of citrus."),
    (
        "length_constraints:number_words",
        {"num_words": 10, "relation": "at least"},
        "This bamboo board is light, sturdy, easy to clean and looks great on any counter.",
        "A light board.",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "A light board that lasts.",
        "It is light. It is sturdy. It is cheap.",
    ),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 3},
        "* light\n* sturdy\n* easy to clean",
        "* light\n* sturdy",
    ),
    (
        "detectable_content:postscript",
        {"postscript_marker": "P.S."},
        "Great board for daily use.\nP.S. It ships tomorrow.",
        "Great board for daily use.",
    ),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        "It is on sale tonight. Any other questions?",
        "Any other questions? It is on sale tonight.",
    ),
    ("detectable_format:json_format", {}, '{"product": "bamboo board", "price": "$19.90"}', "product: bamboo board"),
    (
        "keywords:existence",
        {"keywords": ["bamboo", "sturdy"]},
        "The bamboo board is sturdy.",
        "The wooden board is strong.",
    ),
    ("keywords:forbidden_words", {"forbidden_words": ["cheap"]}, "It is affordable.", "It is cheap."),
    ("detectable_format:title", {}, "<<The board>>\nLight and sturdy.", "The board: light and sturdy."),
    ("startend:quotation", {}, '"Light and sturdy."', "Light and sturdy."),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "Ship to [address] by [date].",
        "Ship to your address soon.",
    ),
    (
        "combination:repeat_prompt",
        {"prompt_to_repeat": "Describe the bamboo cutting board."},
        "Describe the bamboo cutting board. It is light.",
        "It is light. Describe the bamboo cutting board.",
    ),
]


@pytest.mark.parametrize(("iid", "kwargs", "good", "bad"), HAND_WRITTEN, ids=[h[0] for h in HAND_WRITTEN])
def test_hand_written_responses_are_scored_right(iid, kwargs, good, bad):
    c = case(iid, **kwargs)
    assert score_response(c, good).prompt_strict is True
    assert score_response(c, bad).prompt_strict is False


def test_loose_forgives_a_markdown_wrapper_that_strict_does_not():
    c = case("startend:end_checker", end_phrase="Any other questions?")
    wrapped = "Sure! Here you go:\nIt is on sale tonight. Any other questions?\n---"
    score = score_response(c, wrapped)
    assert (score.prompt_strict, score.prompt_loose) == (False, True)


def test_a_prompt_passes_only_when_every_instruction_does():
    c = IFEvalCase(
        id="two",
        prompt="Describe it.",
        instruction_id_list=["punctuation:no_comma", "change_case:english_lowercase"],
        kwargs=[{}, {}],
    )
    score = score_response(c, "It is light and sturdy.")  # no comma, but not lowercase
    assert [v.strict for v in score.instructions] == [True, False]
    assert score.prompt_strict is False
    acc = accuracy([score, score_response(c, "it is light and sturdy.")])
    assert acc["prompt_strict"] == 0.5 and acc["instruction_strict"] == 0.75


def test_empty_responses_and_think_blocks():
    c = case("punctuation:no_comma")
    assert score_response(c, "").prompt_strict is False
    assert score_response(c, "<think>hmm, commas, commas</think>No commas here.").prompt_strict is True


def test_generated_prompts_are_deterministic_cover_the_registry_and_avoid_conflicts():
    a, b = build_cases(60, seed=7), build_cases(60, seed=7)
    assert [x.to_dict() for x in a] == [x.to_dict() for x in b]
    assert build_cases(5, seed=8)[0].to_dict() != a[0].to_dict()
    instructions, conflicts = registry()
    used = {iid for c in a for iid in c.instruction_id_list}
    assert used == set(instructions)  # 60 cases round-robin over the 25 checkers
    for c in a:
        ids = c.instruction_id_list
        assert len(set(ids)) == len(ids)
        for x in ids:
            assert not any(y in conflicts.get(x, set()) for y in ids if y != x)
        # The checker's own wording is in the prompt, after the live-commerce base prompt.
        assert c.prompt.startswith(c.base) and len(c.prompt) > len(c.base)


def test_generated_prompts_store_the_arguments_the_checker_scores_with():
    # The keywords the prompt asks for are in the stored kwargs, and an answer that uses them
    # passes that instruction (no hidden randomness at scoring time).
    c = next(x for x in build_cases(30, seed=3) if x.instruction_id_list[0] == "keywords:existence")
    keywords = c.kwargs[0]["keywords"]
    assert all(k in c.prompt for k in keywords)
    with_keywords = score_response(c, "We talk about " + " and ".join(keywords) + " tonight.")
    without = score_response(c, "Nothing relevant here.")
    assert with_keywords.instructions[0].strict and not without.instructions[0].strict


def test_official_prompt_files_load_and_bad_lines_name_the_line(tmp_path):
    good = tmp_path / "input_data.jsonl"
    good.write_text(
        json.dumps(
            {
                "key": 1000,
                "prompt": "Write a haiku. Do not use commas.",
                "instruction_id_list": ["punctuation:no_comma"],
                "kwargs": [{"num_words": None}],
            }
        )
        + "\n"
    )
    cases = load_official(good)
    assert cases[0].id == "ifeval-official-1000" and cases[0].kwargs == [{}] and cases[0].source == "official"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"key": 1, "prompt": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: missing field 'instruction_id_list'"):
        load_official(bad)


def test_a_response_whose_language_cannot_be_detected_counts_as_followed_without_a_log_line(caplog):
    c = case("language:response_language", language="en")
    assert score_response(c, "*").prompt_strict is True  # the official rule: undetectable counts as followed
    assert not [r for r in caplog.records if "Unable to detect language" in r.getMessage()]
