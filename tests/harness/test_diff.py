"""The semantic diff, as a reviewer relies on it: matched by key, explained, with a bump."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessctl.harness import Rule, Skill, diff_harnesses
from harnessctl.harness.diff import compare_parameters, moved_keys, word_diff


def kinds(d):
    return [(c.kind, c.element, c.path) for c in d.changes]


def only(d, kind, element=None):
    found = [c for c in d.changes if c.kind == kind and (element is None or c.element == element)]
    assert len(found) == 1, kinds(d)
    return found[0]


def test_a_harness_equals_itself(livecommerce):
    d = diff_harnesses(livecommerce, livecommerce.copy())
    assert d.equal and d.changes == [] and d.bump is None
    assert d.summary() == "no semantic change"


def test_the_version_field_is_a_name_not_a_change(livecommerce):
    b = livecommerce.copy()
    b.version = "v99"
    assert diff_harnesses(livecommerce, b).equal


def test_a_new_tool_name_on_the_same_key_is_a_rename_not_remove_and_add(livecommerce):
    b = livecommerce.copy()
    b.tool("order_status").name = "where_is_my_order"
    d = diff_harnesses(livecommerce, b)
    c = only(d, "renamed")
    assert (c.element, c.key, c.from_, c.to) == ("tool", "order_status", "track_order", "where_is_my_order")
    assert kinds(d) == [("renamed", "tool", "order_status")]
    assert d.bump == "minor"
    assert d.summary() == "tool order_status renamed track_order→where_is_my_order"


def test_a_renamed_skill_and_loader_are_renames_too(livecommerce):
    b = livecommerce.copy()
    b.skill("greeting").name = "say_hello"
    b.skill_loader.name = "open_skill"
    d = diff_harnesses(livecommerce, b)
    assert sorted(kinds(d)) == [("renamed", "skill", "greeting"), ("renamed", "skill_loader", "load_skill")]


def test_moving_a_prompt_block_is_one_reorder_not_a_change_of_content(livecommerce):
    b = livecommerce.copy()
    blocks = b.prompt.blocks
    moved = blocks.pop(3)  # reply_style, 4th
    blocks.append(moved)
    d = diff_harnesses(livecommerce, b)
    c = only(d, "reordered")
    assert (c.element, c.key, c.from_, c.to) == ("prompt_block", moved.key, 4, len(blocks))
    assert not [x for x in d.changes if x.kind == "changed"]
    assert d.bump == "patch"


def test_inserting_a_block_does_not_reorder_the_blocks_after_it(livecommerce):
    from harnessctl.harness import PromptBlock

    b = livecommerce.copy()
    b.prompt.blocks.insert(1, PromptBlock(key="holiday", text="Mention the holiday opening hours."))
    d = diff_harnesses(livecommerce, b)
    assert kinds(d) == [("added", "prompt_block", "holiday")]
    assert d.bump == "minor"


def test_reordered_rules_inside_a_skill_name_their_skill(livecommerce):
    b = livecommerce.copy()
    rules = b.skill("compliance").rules
    rules.insert(0, rules.pop())
    c = only(diff_harnesses(livecommerce, b), "reordered")
    assert (c.element, c.parent, c.key, c.to) == ("rule", "compliance", rules[0].key, 1)


def test_moved_keys_ignores_insertions_and_removals():
    assert moved_keys(list("abcd"), list("abcd")) == []
    assert moved_keys(list("abcd"), list("axbd")) == []
    assert moved_keys(list("abcd"), list("dabc")) == ["d"]
    assert moved_keys(list("abcdef"), list("abdcef")) in (["c"], ["d"])


def test_swapping_first_and_last_moves_those_two_not_the_middle_one():
    assert moved_keys(list("abc"), list("cba")) == ["c", "a"]
    assert moved_keys(list("abcde"), list("ebcda")) == ["e", "a"]


def test_a_reorder_names_the_element_it_now_follows(livecommerce):
    b = livecommerce.copy()
    rules = b.skill("compliance").rules
    rules.reverse()  # four rules: 1 2 3 4 -> 4 3 2 1
    d = diff_harnesses(livecommerce, b)
    moved = [c for c in d.changes if c.kind == "reordered"]
    assert len(moved) == len(rules) - 1
    for c in moved:
        i = [r.key for r in rules].index(c.key)
        assert c.to == i + 1 and c.after == (rules[i - 1].key if i else None)
        assert c.to_dict()["after"] == c.after
        assert c.from_ != c.to


def test_an_element_moved_among_removals_can_keep_its_number_and_says_where_it_went(livecommerce):
    from harnessctl.harness.diff_view import _move_words

    b = livecommerce.copy()
    k1, k2, k3, k4, k5, k6 = b.prompt.blocks
    b.prompt.blocks = [k4, k5, k3, k6]  # k1, k2 removed; k3 still 3rd, but now after k4 and k5
    c = only(diff_harnesses(livecommerce, b), "reordered")
    assert (c.key, c.from_, c.to, c.after) == (k3.key, 3, 3, k5.key)
    assert _move_words(c) == f"moved: now after {k5.key} (position 3, as before)"
    b.prompt.blocks = [k2, k1, k3, k4, k5, k6]
    c = only(diff_harnesses(livecommerce, b), "reordered")
    assert _move_words(c) in (
        "moved up: now first (position 2 → 1)",
        f"moved down: now after {k2.key} (position 1 → 2)",
    )


def test_a_move_that_keeps_its_number_is_not_shown_as_from_n_to_n():
    from harnessctl.harness.diff import Change
    from harnessctl.harness.diff_view import _move_words

    c = Change("reordered", "rule", "see_professional", 3, 3, parent="compliance", after="facts_only")
    assert _move_words(c) == "moved: now after facts_only (position 3, as before)"
    assert "from 3 to 3" not in _move_words(c)


def test_a_constraint_change_shows_old_and_new_values(livecommerce):
    b = livecommerce.copy()
    b.prompt.constraints["max_reply_chars"].value = 100
    b.prompt.constraints["max_reply_chars"].max = 180
    d = diff_harnesses(livecommerce, b)
    changes = {(c.field, c.from_, c.to) for c in d.changes if c.element == "constraint" and c.key == "max_reply_chars"}
    assert changes == {("value", 120, 100), ("max", 200, 180)}
    assert d.bump == "minor"
    assert "max_reply_chars 120→100" in d.summary()


def test_a_rule_edit_carries_a_word_level_diff(livecommerce):
    b = livecommerce.copy()
    rule = b.skill("compliance").rules[-1]
    old = rule.text
    rule.text = old.replace("perfect", "flawless")
    c = only(diff_harnesses(livecommerce, b), "changed", "rule")
    assert (c.parent, c.key, c.field, c.from_, c.to) == ("compliance", rule.key, "text", old, rule.text)
    assert [(w.op, w.text.strip()) for w in c.words if w.op != "="] == [("-", "perfect"), ("+", "flawless")]
    assert c.impact == "minor"


def test_word_diff_keeps_unchanged_words_and_marks_the_rest():
    spans = word_diff(
        "Avoid words like best or perfect.", "Avoid absolute words such as best, safest, perfect or guaranteed."
    )
    deleted = "".join(w.text for w in spans if w.op == "-")
    inserted = "".join(w.text for w in spans if w.op == "+")
    kept = "".join(w.text for w in spans if w.op == "=")
    assert "like" in deleted and "such as" in inserted and "guaranteed" in inserted
    assert "Avoid" in kept and "best" in kept
    old = "".join(w.text for w in spans if w.op != "+")
    new = "".join(w.text for w in spans if w.op != "-")
    assert words(old) == words("Avoid words like best or perfect.")
    assert words(new) == words("Avoid absolute words such as best, safest, perfect or guaranteed.")


def words(text):
    return re.findall(r"\w+|[^\w\s]", text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab .,", max_size=30), st.text(alphabet="ab .,", max_size=30))
def test_word_diff_rebuilds_both_texts_word_for_word(a, b):
    spans = word_diff(a, b)
    assert words("".join(w.text for w in spans if w.op != "+")) == words(a)
    assert words("".join(w.text for w in spans if w.op != "-")) == words(b)


def test_a_description_rewording_is_a_patch(livecommerce):
    b = livecommerce.copy()
    b.tool("stock_check").description = "count what is left of a product"
    d = diff_harnesses(livecommerce, b)
    c = only(d, "changed")
    assert (c.element, c.field, c.impact) == ("tool", "description", "patch")
    assert d.bump == "patch"


def test_an_added_skill_is_one_event_and_a_removed_skill_is_major(livecommerce):
    b = livecommerce.copy()
    flash = b.skill("flash_sale")
    b.skills.remove(flash)
    removed = diff_harnesses(livecommerce, b)
    assert kinds(removed) == [("removed", "skill", "flash_sale")]
    assert removed.bump == "major"
    added = diff_harnesses(b, livecommerce)
    c = only(added, "added")
    assert c.to["name"] == "flash_sale" and c.to["rules"] == [r.key for r in flash.rules]
    assert added.bump == "minor"
    assert added.summary() == "+skill flash_sale"


def test_a_removed_tool_is_major(livecommerce):
    b = livecommerce.copy()
    b.tools = [t for t in b.tools if t.key != "return_policy"]
    assert diff_harnesses(livecommerce, b).bump == "major"


def _params(tool_parameters_change, livecommerce):
    b = livecommerce.copy()
    tool_parameters_change(b.tool("product_search").parameters)
    return diff_harnesses(livecommerce, b)


@pytest.mark.parametrize(
    "edit, kind, breaking",
    [
        (lambda p: p["required"].append("category"), "became_required", True),
        (lambda p: p["properties"].update(limit={"type": "integer"}) or p["required"].append("limit"), "added", True),
        (lambda p: p["properties"].pop("category"), "removed", True),
        (lambda p: p["properties"]["query"].update(type="integer"), "type_changed", True),
        (lambda p: p["properties"]["category"]["enum"].remove("home"), "enum_narrowed", True),
        (lambda p: p["properties"]["category"]["enum"].append("toys"), "enum_widened", False),
        (lambda p: p["properties"].update(limit={"type": "integer"}), "added", False),
        (lambda p: p["properties"]["query"].update(description="what the viewer typed"), "description_changed", False),
        (lambda p: p["properties"]["query"].update(maxLength=40), "constraint_tightened", True),
    ],
    ids=[
        "optional-made-required",
        "required-added",
        "removed",
        "type",
        "enum-narrowed",
        "enum-widened",
        "optional-added",
        "description",
        "bound-added",
    ],
)
def test_tool_parameter_changes_are_classed_breaking_or_not(livecommerce, edit, kind, breaking):
    d = _params(edit, livecommerce)
    c = only(d, "parameters_changed")
    assert c.key == "product_search" and c.breaking is breaking
    assert kind in [p.kind for p in c.parameters]
    assert all(p.breaking is breaking for p in c.parameters)
    expected_bump = "major" if breaking else ("patch" if kind == "description_changed" else "minor")
    assert d.bump == expected_bump


def test_nested_parameter_changes_are_addressed_by_path():
    a = {"type": "object", "properties": {"address": {"type": "object", "properties": {"zip": {"type": "string"}}}}}
    b = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"zip": {"type": "integer"}}, "required": ["zip"]}},
    }
    found = {(p.parameter, p.kind, p.breaking) for p in compare_parameters(a, b)}
    assert found == {("address.zip", "type_changed", True), ("address.zip", "became_required", True)}


def test_hook_and_guard_fields_show_old_and_new(livecommerce):
    b = livecommerce.copy()
    b.hooks.retry.max_attempts = 3
    b.hooks.guards[1].phrases = b.hooks.guards[1].phrases + ["clinically proven"]
    d = diff_harnesses(livecommerce, b)
    hook = only(d, "changed", "hook")
    assert (hook.key, hook.field, hook.from_, hook.to) == ("retry", "max_attempts", 2, 3)
    guard = only(d, "changed", "guard")
    assert guard.key == "banned_phrases" and guard.to[-1] == "clinically proven"


def test_skill_tool_list_and_variable_changes(livecommerce):
    b = livecommerce.copy()
    b.skill("greeting").tools = ["product_search"]
    b.variables["brand"] = "Lumi Live+"
    d = diff_harnesses(livecommerce, b)
    tools = only(d, "changed", "skill")
    assert (tools.key, tools.field, tools.to) == ("greeting", "tools", ["product_search"])
    var = only(d, "changed", "variable")
    assert (var.key, var.from_, var.to) == ("brand", "Lumi Live", "Lumi Live+")


def test_json_shape_is_one_object_with_from_to_changes_bump(livecommerce):
    b = livecommerce.copy()
    b.tool("order_status").name = "track"
    b.skill("compliance").rules.append(Rule(key="no_before_after", text="Never show before/after photos."))
    b.skills.append(Skill(key="giveaway", name="giveaway", description="run a giveaway", rules=[], tools=[]))
    d = diff_harnesses(livecommerce, b, from_label="v3", to_label="working")
    data = json.loads(json.dumps(d.to_dict()))
    assert set(data) >= {"from", "to", "changes", "bump"}
    assert (data["from"], data["to"], data["bump"]) == ("v3", "working", "minor")
    for change in data["changes"]:
        assert {"kind", "element", "key", "from", "to"} <= set(change)
    assert {(c["kind"], c["element"], c["key"]) for c in data["changes"]} == {
        ("renamed", "tool", "order_status"),
        ("added", "rule", "no_before_after"),
        ("added", "skill", "giveaway"),
    }


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_any_permutation_of_blocks_gives_only_reorders(livecommerce_static, data):
    a = livecommerce_static
    b = a.copy()
    order = data.draw(st.permutations(range(len(b.prompt.blocks))))
    b.prompt.blocks = [b.prompt.blocks[i] for i in order]
    d = diff_harnesses(a, b)
    assert all(c.kind == "reordered" and c.element == "prompt_block" for c in d.changes)
    assert d.bump in (None, "patch")
    # Applying the reported moves is not needed to know the order changed: no move, no change.
    assert d.equal == (list(order) == sorted(order))


@pytest.fixture(scope="module")
def livecommerce_static(livecommerce_path):
    from harnessctl.harness import load_harness

    return load_harness(livecommerce_path)
