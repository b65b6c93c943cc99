"""What the model sees of a tool result, how arguments are checked, and how replies are guarded."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessctl.harness import render_harness
from harnessctl.harness.model import Guard, Harness, Hooks, MessageHook
from harnessctl.runtime import run_episode
from harnessctl.runtime.guards import apply_guards, reply_char_limit, truncate_reply
from harnessctl.runtime.messages import format_tool_result, parse_tool_content, viewer_message
from harnessctl.runtime.validation import check_arguments, validator_for
from harnessctl.sim import World, generate_cases
from harnessctl.sim.backends import SIM_BACKENDS

TEXT = MessageHook(tool_result_format="text", tool_result_prefix="Tool says:")
JSON = MessageHook(tool_result_format="json", tool_result_prefix="")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12),
)
keys = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
payloads = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3), st.dictionaries(keys, inner, min_size=1, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, payloads, min_size=1, max_size=4))
def test_text_results_read_back_as_the_data(result):
    for hook in (TEXT, JSON):
        assert parse_tool_content(format_tool_result(result, hook), hook) == result


@pytest.mark.parametrize("backend", SIM_BACKENDS)
def test_every_backend_result_survives_both_formats(backend):
    from tests.sim.test_world import GOOD_ARGS

    result = World().call(backend, GOOD_ARGS[backend])
    for hook in (TEXT, JSON):
        assert parse_tool_content(format_tool_result(result, hook), hook) == result


def test_the_text_format_is_one_line_per_value_after_the_prefix():
    text = format_tool_result({"id": "P001", "price": 19.9, "code": "007", "tags": []}, TEXT)
    assert text.splitlines() == ["Tool says:", "id: P001", "price: 19.9", 'code: "007"', "tags: []"]


def test_the_viewer_message_shows_the_stream_context_first():
    case = generate_cases(15, seed=0, intents=["comparison"])[0]
    content = viewer_message(case)["content"]
    header, query = content.split("\n", 1)
    assert query == case.query
    assert f"on screen: {case.context.product_name} ({case.context.product_id})" in header
    ((pid, name),) = case.context.lineup.items()
    assert f"earlier: {name} ({pid})" in header and case.context.viewer["handle"] in header


def test_arguments_are_checked_against_the_schema_with_cached_validators(livecommerce):
    schema = livecommerce.tool("order_status").parameters
    assert check_arguments(schema, {"order_id": "LM123456"}) is None
    assert "does not match" in check_arguments(schema, {"order_id": "lm1"})
    assert check_arguments(schema, {}) == "'order_id' is a required property"
    assert check_arguments(schema, None) == "arguments must be a JSON object"
    # A variant's copy of the same schema reuses the compiled validator.
    assert validator_for(json.loads(json.dumps(schema))) is validator_for(schema)
    assert "not a valid JSON Schema" in check_arguments({"type": "nonsense"}, {})


def test_guards_use_the_tightest_limit_and_fix_or_ask():
    h = Harness(
        name="h",
        hooks=Hooks(
            guards=[
                Guard(type="max_chars", limit=40, action="revise"),
                Guard(type="banned_phrases", phrases=["miracle"], action="replace", replacement="great"),
            ]
        ),
    )
    assert reply_char_limit(h) == 40
    ask = apply_guards("a miracle cream that everyone loves, so soft and light", h, allow_revise=True)
    assert ask.revise_feedback and "limit is 40" in ask.revise_feedback
    fixed = apply_guards("a miracle cream that everyone loves, so soft and light", h, allow_revise=False)
    assert fixed.revise_feedback is None and len(fixed.reply) <= 40 and "miracle" not in fixed.reply
    assert [e["action"] for e in fixed.events] == ["truncate", "replace"]
    assert truncate_reply("short", 40) == "short"


def test_same_seed_same_records(livecommerce):
    from harnessctl.sim import OracleModel

    def records(seed):
        rendered = render_harness(livecommerce)
        out = []
        for case in generate_cases(60, seed=seed, faults=0.4):
            d = run_episode(livecommerce, case, OracleModel(), rendered=rendered).to_dict()
            d.pop("latency_s")
            for s in d["model_steps"] + d["tool_steps"]:
                s.pop("latency_s")
            out.append(json.dumps(d, sort_keys=True))
        return out

    assert records(6) == records(6)
    assert records(6) != records(7)
