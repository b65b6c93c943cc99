"""Tool calls written as text: what a model writes is what the runtime reads, and bad text never crashes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessctl.models.toolcall_text import format_tool_call, parse_tool_calls, split_think
from harnessctl.models.types import ToolCall


def test_one_call_after_some_text():
    text = 'Let me check!<tool_call>{"name": "check_stock", "arguments": {"product_id": "P012", "variant": "M"}}</tool_call>'
    content, calls, errors = parse_tool_calls(text)
    assert content == "Let me check!"
    assert calls == [
        ToolCall(
            name="check_stock",
            arguments={"product_id": "P012", "variant": "M"},
            raw_arguments=json.dumps({"product_id": "P012", "variant": "M"}),
        )
    ]
    assert errors == []


def test_several_calls_with_qwen_style_whitespace():
    text = (
        '<tool_call>\n{"name": "load_skill", "arguments": {"name": "explain_price"}}\n</tool_call>\n'
        '<tool_call>\n  {"name": "get_promotions", "arguments": {"product_id": "P001"}}\n</tool_call>'
    )
    content, calls, errors = parse_tool_calls(text)
    assert content == ""
    assert [c.name for c in calls] == ["load_skill", "get_promotions"]
    assert calls[1].arguments == {"product_id": "P001"}
    assert errors == []


def test_plain_reply_has_no_calls():
    assert parse_tool_calls("It is $19.90 live, 12 left!") == ("It is $19.90 live, 12 left!", [], [])
    assert parse_tool_calls("") == ("", [], [])
    assert parse_tool_calls(None) == ("", [], [])


def test_arguments_given_as_a_json_string_are_parsed():
    text = '<tool_call>{"name": "track_order", "arguments": "{\\"order_id\\": \\"O12345\\"}"}</tool_call>'
    _, calls, errors = parse_tool_calls(text)
    assert calls[0].arguments == {"order_id": "O12345"}
    assert errors == []


def test_missing_arguments_mean_no_arguments():
    _, calls, errors = parse_tool_calls('<tool_call>{"name": "greet"}</tool_call>')
    assert calls[0].arguments == {} and errors == []


def test_malformed_json_keeps_the_name_so_the_runtime_can_ask_for_a_fix():
    text = 'ok <tool_call>{"name": "get_product_details", "arguments": {product_id: P012}}</tool_call>'
    content, calls, errors = parse_tool_calls(text)
    assert content == "ok"
    assert calls[0].name == "get_product_details"
    assert calls[0].arguments is None
    assert calls[0].raw_arguments == "{product_id: P012}"
    assert len(errors) == 1 and errors[0].startswith("tool call 1: arguments are not valid JSON")


def test_garbage_without_a_name_is_only_an_error():
    content, calls, errors = parse_tool_calls("<tool_call>!!!</tool_call>bye")
    assert (content, calls) == ("bye", [])
    assert errors == ["tool call 1: not valid JSON (Expecting value)"]


def test_arguments_that_are_not_an_object_are_an_error():
    _, calls, errors = parse_tool_calls('<tool_call>{"name": "a", "arguments": "[1, 2]"}</tool_call>')
    assert calls[0].arguments is None and calls[0].raw_arguments == "[1, 2]"
    assert "must be a JSON object" in errors[0]
    _, calls, errors = parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>')
    assert calls == [] and errors == ["tool call 1: missing tool name"]


def test_unterminated_tag_with_complete_json_is_a_call():
    # Servers often stop generation on the closing tag.
    content, calls, errors = parse_tool_calls('Sure.<tool_call>{"name": "a", "arguments": {"k": 1}}')
    assert content == "Sure."
    assert calls[0].arguments == {"k": 1} and errors == []


def test_unterminated_tag_with_cut_json_is_an_error():
    _, calls, errors = parse_tool_calls('<tool_call>{"name": "a", "arguments": {"k": ')
    assert calls[0].name == "a" and calls[0].arguments is None
    assert "unterminated" in errors[0]
    _, calls, errors = parse_tool_calls("<tool_call>")
    assert calls == [] and "empty" in errors[0]


def test_stray_closing_tag_is_removed_and_reported():
    content, calls, errors = parse_tool_calls("Hello</tool_call> there")
    assert content == "Hello there" and calls == []
    assert "stray" in errors[0]


def test_think_blocks_stay_in_content_and_calls_inside_them_are_not_actions():
    text = (
        '<think>maybe <tool_call>{"name": "x", "arguments": {}}</tool_call> first</think>'
        'Checking.<tool_call>{"name": "y", "arguments": {}}</tool_call>'
    )
    content, calls, errors = parse_tool_calls(text)
    assert [c.name for c in calls] == ["y"]
    assert content.startswith("<think>maybe <tool_call>") and content.endswith("Checking.")
    assert split_think(content) == ('maybe <tool_call>{"name": "x", "arguments": {}}</tool_call> first', "Checking.")


def test_format_is_compact_and_matches_json_dumps():
    call = ToolCall(name="get_product_details", arguments={"product_id": "P012"})
    assert (
        format_tool_call(call)
        == '<tool_call>{"name": "get_product_details", "arguments": {"product_id": "P012"}}</tool_call>'
    )
    openai_item = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_product_details", "arguments": '{"product_id": "P012"}'},
    }
    assert format_tool_call(openai_item) == format_tool_call(call)


def test_a_malformed_call_round_trips_as_written():
    text = '<tool_call>{"name": "a", "arguments": {oops}}</tool_call>'
    _, calls, _ = parse_tool_calls(text)
    assert format_tool_call(calls[0]) == text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    prose=st.text(max_size=30).filter(lambda s: "<" not in s),
    calls=st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True),
            st.dictionaries(st.text(max_size=8), json_values, max_size=4),
        ),
        max_size=3,
    ),
)
def test_format_then_parse_round_trips(prose, calls):
    objs = [ToolCall(name=n, arguments=a) for n, a in calls]
    content, parsed, errors = parse_tool_calls(prose + "".join(format_tool_call(c) for c in objs))
    assert errors == []
    assert content == prose.strip()
    assert [(c.name, c.arguments) for c in parsed] == [(c.name, c.arguments) for c in objs]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('<>/{}":,tool_call think ab\n[]1')), max_size=80))
def test_any_text_parses_without_raising(text):
    content, calls, errors = parse_tool_calls(text)
    assert isinstance(content, str)
    assert all(isinstance(c, ToolCall) for c in calls)
    assert all(isinstance(e, str) for e in errors)


@pytest.mark.parametrize(
    "text", ["<tool_call>{}</tool_call>", "<tool_call>null</tool_call>", '<tool_call>{"name": 3}</tool_call>']
)
def test_odd_objects_are_errors(text):
    _, calls, errors = parse_tool_calls(text)
    assert calls == [] and len(errors) == 1
