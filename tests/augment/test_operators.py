"""What each operator does, and what it must never do, on small hand-made harnesses."""

from __future__ import annotations

import pytest

from harnessctl.augment import OPERATORS, OpContext, apply_operator, apply_operators, resolve_operators
from harnessctl.augment.operators import is_essential_rule
from harnessctl.augment.references import rewrite_literal_names
from harnessctl.harness.model import Harness, Prompt, PromptBlock, Rule, Skill, Tool
from harnessctl.harness.render import render_harness, render_skill

FULL = OpContext(strength=1.0)


def _tool(key, name, desc="does a thing"):
    return Tool(
        key=key,
        name=name,
        description=desc,
        parameters={"type": "object", "properties": {"q": {"type": "string", "description": "what the viewer typed"}}},
        backend=f"sim.{key}",
    )


def _harness() -> Harness:
    return Harness(
        name="mini",
        prompt=Prompt(
            blocks=[
                PromptBlock("persona", "You are a shop host."),
                PromptBlock(
                    "literal", "Always call get_item_card before quoting a price; use `search` for unknown items."
                ),
                PromptBlock("templated", "Load skills with {{ skill_loader }}; prices come from {{ tool.card }}."),
                PromptBlock("style", "Be brief."),
            ]
        ),
        skills=[
            Skill(
                "pricing",
                "explain_price",
                "give the price",
                [
                    Rule("fetch", "Call {{ tool.card }} first."),
                    Rule("say_it", "Say the price clearly."),
                    Rule("never", "Never invent a discount."),
                    Rule("literal", "If unsure, call get_item_card again."),
                    Rule("friendly", "Smile in your words."),
                ],
                ["card"],
            ),
            Skill("greeting", "greet_viewer", "welcome a viewer", [Rule("hello", "Say hello.")], []),
            Skill(
                "refs", "route_viewer", "send the viewer on", [Rule("to_price", "For prices use explain_price.")], []
            ),
        ],
        tools=[
            _tool("card", "get_item_card", "show the card of an item"),
            _tool("search", "search", "find items by words"),
        ],
    )


def test_renaming_tools_moves_templates_and_literal_mentions_with_them():
    h = _harness()
    v, rec = apply_operator(h, "rename_tools", seed=5, ctx=FULL)
    new_card, new_search = v.tool("card").name, v.tool("search").name
    assert {c.before for c in rec.changes} == {"get_item_card", "search"}
    prompt = render_harness(v).system_prompt
    assert "get_item_card" not in prompt and f"call {new_card} before" in prompt
    assert f"from {new_card}." in prompt  # the {{ tool.card }} template
    # A plain-word name moves only where it is marked as a name (backticks), not in prose.
    assert f"`{new_search}`" in prompt
    assert render_skill(v, v.skill("pricing")).endswith(f"Tools: {new_card}")
    assert "call " + new_card + " again" in v.skill("pricing").rules[3].text
    assert render_harness(v).tool_key_by_name[new_card] == "card"
    assert h.tool("card").name == "get_item_card"  # the source is untouched


def test_literal_rewrite_never_touches_templates_or_longer_identifiers():
    text = "Use get_item_card, not get_item_card_v2 nor {{ tool.get_item_card }}."
    assert rewrite_literal_names(text, {"get_item_card": "fetch_card"}) == (
        "Use fetch_card, not get_item_card_v2 nor {{ tool.get_item_card }}."
    )


def test_renaming_skills_moves_literal_skill_names_in_other_skills_rules():
    v, _ = apply_operator(_harness(), "rename_skills", seed=2, ctx=FULL)
    assert v.skill("refs").rules[0].text == f"For prices use {v.skill('pricing').name}."
    names = [s.name for s in v.skills] + [t.name for t in v.tools] + [v.skill_loader.name]
    assert len(set(names)) == len(names)


def test_rule_hiding_keeps_rules_that_name_tools_or_forbid_something():
    h = _harness()
    essential = {r.key for r in h.skill("pricing").rules if is_essential_rule(h, r.text)}
    assert essential == {"fetch", "never", "literal"}
    for seed in range(30):
        v, _ = apply_operator(h, "hide_rules", seed=seed, ctx=FULL)
        kept = {r.key for r in v.skill("pricing").rules}
        assert essential <= kept
        assert all(s.rules for s in v.skills)


def test_skill_hiding_needs_the_case_and_spares_what_it_needs_and_what_is_referenced():
    h = _harness()
    assert apply_operator(h, "hide_skills", seed=1, ctx=FULL)[1].changes == []  # no case known: no hiding
    hidden_any = False
    for seed in range(40):
        ctx = OpContext(strength=1.0, protected_skill_keys=frozenset({"greeting"}))
        v, rec = apply_operator(h, "hide_skills", seed=seed, ctx=ctx)
        keys = {s.key for s in v.skills}
        assert {"greeting", "pricing"} <= keys  # protected, and named by another skill's rule
        hidden_any |= bool(rec.changes)
        assert v.skill_by_name("explain_price") is not None
        assert "route_viewer" not in render_harness(v).system_prompt or "refs" in keys
    assert hidden_any


def test_block_reordering_keeps_the_persona_first_unless_told_otherwise():
    h = _harness()
    firsts = set()
    for seed in range(20):
        v, _ = apply_operator(h, "reorder_blocks", seed=seed, ctx=FULL)
        assert v.prompt.blocks[0].key == "persona"
        assert sorted(b.key for b in v.prompt.blocks) == sorted(b.key for b in h.prompt.blocks)
        v2, _ = apply_operator(h, "reorder_blocks", seed=seed, ctx=OpContext(strength=1.0, keep_first_block=False))
        firsts.add(v2.prompt.blocks[0].key)
    assert len(firsts) > 1


def test_rule_reordering_and_paraphrasing_keep_every_rule_and_its_references():
    h = _harness()
    v, _ = apply_operators(h, ["reorder_rules", "paraphrase_rules"], seed=9, ctx=FULL)
    before, after = h.skill("pricing"), v.skill("pricing")
    assert sorted(r.key for r in after.rules) == sorted(r.key for r in before.rules)
    fetch = next(r for r in after.rules if r.key == "fetch")
    assert "{{ tool.card }}" in fetch.text


def test_tool_descriptions_change_but_parameters_keep_names_and_types():
    h = _harness()
    v, rec = apply_operator(h, "rewrite_tool_descriptions", seed=4, ctx=FULL)
    assert rec.changes
    for t in v.tools:
        assert set(t.parameters["properties"]) == {"q"}
        assert t.parameters["properties"]["q"]["type"] == "string"
        assert t.backend == h.tool(t.key).backend


def test_strength_zero_changes_nothing():
    h = _harness()
    v, records = apply_operators(h, None, seed=1, ctx=OpContext(strength=0.0))
    assert all(not r.changes for r in records)
    assert render_harness(v).system_prompt == render_harness(h).system_prompt


def test_the_records_replay_the_variant_operator_by_operator():
    h = _harness()
    v, records = apply_operators(h, None, seed=77, ctx=OpContext(strength=0.8))
    replay = h
    for rec in records:
        replay, again = apply_operator(replay, rec.operator, seed=rec.seed, ctx=OpContext(strength=0.8))
        assert again.changes == rec.changes
    assert render_harness(replay).system_prompt == render_harness(v).system_prompt
    assert {r.family for r in records} == {"skills", "skill_content", "tools", "prompt", "hooks"}


def test_families_expand_and_unknown_names_are_refused_with_the_known_ones():
    assert resolve_operators(["hooks"]) == ["vary_retry", "vary_message"]
    assert set(resolve_operators(None)) == set(OPERATORS)
    with pytest.raises(ValueError, match="unknown operator or family 'tool'.*tools"):
        resolve_operators(["tool"])
    with pytest.raises(ValueError, match="strength"):
        OpContext(strength=1.5)


def test_feasibility_floors_are_inside_the_declared_ranges(source, floors):
    for key, value in floors.items():
        c = source.prompt.constraints[key]
        assert c.min <= value <= c.value


def test_verb_noun_names_keep_what_the_element_is_about_never_just_its_verb(source):
    """compliance_check may become handle_regulatory, never handle_query: a generic verb plus a
    synonym of the name's *content* word, so the new name still points at one element."""
    import random

    from harnessctl.augment.vocab import NameMaker, split_words, vocabulary

    verbs = {
        "check",
        "compare",
        "get",
        "greet",
        "handle",
        "explain",
        "introduce",
        "search",
        "track",
        "transfer",
        "estimate",
    }
    for split in ("train", "heldout"):
        vocab = vocabulary(split)
        maker = NameMaker(vocab)
        for name in [s.name for s in source.skills] + [t.name for t in source.tools]:
            content = [w for w in split_words(name) if w not in vocab.glue and w not in verbs]
            allowed = {syn for w in content for syn in vocab.synonyms.get(w, ())} | set(content)
            for seed in range(30):
                verb, *rest = maker.verb_noun(name, random.Random(seed))
                assert verb in vocab.generic_verbs
                assert len(rest) == 1 and (
                    rest[0] in allowed or rest[0] not in set().union(*vocab.synonyms.values())
                ), (name, rest)
    assert "check" not in NameMaker(vocabulary("train")).verb_noun("compliance_check", random.Random(0))[1:]
