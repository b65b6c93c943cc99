"""The embedded backend: the tiny model in process, and the same model served on loopback."""

from __future__ import annotations

import math

import pytest

from harnessctl.harness import render_harness
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.litellm_backend import LiteLLMModel
from harnessctl.models.local import LocalModel
from harnessctl.models.registry import resolve_model
from harnessctl.models.server import serve_in_background

GREEDY = GenerationSettings(max_tokens=12)


@pytest.fixture(scope="module")
def tiny(tiny_model_path) -> LocalModel:
    return LocalModel(f"local:{tiny_model_path}")


@pytest.fixture
def chat(livecommerce):
    rendered = render_harness(livecommerce)
    messages = [{"role": "system", "content": rendered.system_prompt}, {"role": "user", "content": "how much is P012?"}]
    return messages, rendered.tools


def test_returns_token_ids_and_logprobs_for_trainers(tiny, chat):
    messages, tools = chat
    r = tiny.generate(messages, tools, GREEDY)
    expected_prompt = tiny.tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    assert r.prompt_token_ids == list(expected_prompt)
    assert r.prompt_tokens == len(r.prompt_token_ids)
    assert 1 <= len(r.completion_token_ids) <= GREEDY.max_tokens == 12
    assert r.completion_tokens == len(r.completion_token_ids)
    assert len(r.logprobs) == len(r.completion_token_ids)
    assert all(lp <= 0 and math.isfinite(lp) for lp in r.logprobs)
    assert r.finish_reason in ("stop", "length", "tool_calls")


def test_greedy_is_repeatable_and_sampling_follows_the_seed(tiny, chat):
    messages, tools = chat
    assert (
        tiny.generate(messages, tools, GREEDY).completion_token_ids
        == tiny.generate(messages, tools, GREEDY).completion_token_ids
    )
    hot = GenerationSettings(max_tokens=12, temperature=1.0, seed=5)
    assert (
        tiny.generate(messages, tools, hot).completion_token_ids
        == tiny.generate(messages, tools, hot).completion_token_ids
    )


def test_tool_call_history_in_either_argument_form_renders_the_same(tiny):
    base = [{"role": "user", "content": "stock?"}]
    as_text = base + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "check_stock", "arguments": '{"product_id": "P1"}'},
                }
            ],
        }
    ]
    as_obj = base + [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "check_stock", "arguments": {"product_id": "P1"}}}
            ],
        }
    ]
    assert tiny.prompt_ids(as_text, []) == tiny.prompt_ids(as_obj, [])


def test_a_prompt_longer_than_the_model_is_a_model_error(tiny):
    with pytest.raises(ModelError, match="exceeds"):
        tiny.generate([{"role": "user", "content": "x"}], [], GenerationSettings(max_tokens=tiny.max_positions))


def test_missing_or_wrong_folders_are_clear_errors(tmp_path):
    with pytest.raises(ModelError, match="no such model folder"):
        resolve_model(f"local:{tmp_path / 'nope'}")
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(f"local:{tmp_path}")
    with pytest.raises(ModelError, match="needs a path"):
        resolve_model("local:")


def test_registry_routes_model_strings(tiny_model_path):
    assert isinstance(resolve_model(f"local:{tiny_model_path}"), LocalModel)
    served = resolve_model("openai/tiny", api_base="http://127.0.0.1:9/v1")
    assert isinstance(served, LiteLLMModel) and served.api_base == "http://127.0.0.1:9/v1"
    with pytest.raises(ModelError, match="--api-base is for served models"):
        resolve_model(f"local:{tiny_model_path}", api_base="http://x/v1")
    with pytest.raises(ModelError, match="empty model string"):
        resolve_model("  ")


def test_the_tiny_model_served_on_loopback_answers_through_litellm(tiny, chat):
    messages, tools = chat
    url, stop = serve_in_background(tiny, model_name="tiny")
    try:
        r = LiteLLMModel("openai/tiny", api_base=url).generate(messages, tools, GREEDY)
    finally:
        stop()
    direct = tiny.generate(messages, tools, GREEDY)
    # Same tokens counted on both paths; the text is the same modulo parsed tool calls.
    assert (r.prompt_tokens, r.completion_tokens) == (direct.prompt_tokens, direct.completion_tokens)
    assert r.content == direct.content
    assert [(c.name, c.arguments) for c in r.tool_calls] == [(c.name, c.arguments) for c in direct.tool_calls]


def test_the_tiny_model_streams_its_text_as_it_writes_it_and_the_stream_rebuilds_the_same_reply(tiny, chat):
    import asyncio
    import itertools

    import litellm

    from harnessctl.models.toolcall_text import parse_tool_calls

    messages, tools = chat
    # sampled with a seed: an untrained model's greedy text can be only whitespace, which nothing streams
    settings = GenerationSettings(max_tokens=24, temperature=1.0, seed=0)
    seen: list[str] = []
    direct = tiny.generate(messages, tools, settings, on_text=seen.append)
    # in process: the text grows a word at a time and ends as the reply
    assert len(seen) > 1 and all(b.startswith(a) for a, b in itertools.pairwise(seen))
    assert parse_tool_calls(seen[-1])[0] == direct.content

    url, stop = serve_in_background(tiny, model_name="tiny")

    async def stream() -> list:
        response = await litellm.acompletion(
            model="openai/tiny",
            api_base=url,
            api_key="none",
            messages=messages,
            tools=tools,
            max_tokens=24,
            temperature=1.0,
            seed=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [c async for c in response]

    try:
        chunks = asyncio.run(stream())
    finally:
        stop()
    # served: several chunks, rebuilt by litellm into the reply the model gives in process
    rebuilt = litellm.stream_chunk_builder(chunks)
    assert len(chunks) > 3
    assert (rebuilt.choices[0].message.content or "") == direct.content
    assert rebuilt.usage.completion_tokens == direct.completion_tokens
