"""The prefix cache: the rendered harness is computed once and its KV cache reused by every later
request under it, and an episode's next turn reuses the whole of its last one — with the same
greedy tokens as computing everything again."""

from __future__ import annotations

import pytest

from harnessctl.harness import load_harness, render_harness
from harnessctl.models.base import GenerationSettings
from harnessctl.models.local import MIN_SHARED_PREFIX, LocalModel, PrefixCache

QUERIES = ("how much is P012?", "is the blue one still in stock", "hi", "any bundle price?")


@pytest.fixture(scope="module")
def harness_chat(livecommerce_path):
    rendered = render_harness(load_harness(livecommerce_path, validate=False))

    def chat(query: str) -> list[dict]:
        return [{"role": "system", "content": rendered.system_prompt}, {"role": "user", "content": query}]

    return chat, rendered.tools


@pytest.fixture(scope="module")
def cold(tiny_model_path) -> LocalModel:
    return LocalModel(f"local:{tiny_model_path}", max_batch=1, prefix_cache_mb=0)


def test_requests_under_one_harness_reuse_its_prefix_and_write_what_they_write_without_it(
    tiny_model_path, cold, harness_chat
):
    chat, tools = harness_chat
    warm = LocalModel(f"local:{tiny_model_path}", max_batch=1)
    settings = GenerationSettings(max_tokens=24)
    for i, query in enumerate(QUERIES):
        expected = cold.generate(chat(query), tools, settings)
        got = warm.generate(chat(query), tools, settings)
        assert got.completion_token_ids == expected.completion_token_ids, query
        assert got.content == expected.content and got.tool_calls == expected.tool_calls
        if i == 0:
            assert warm.cached_prefix_tokens == 0
    # every request after the first found at least the rendered harness (system prompt, tools)
    prompt = warm.prompt_ids(chat(QUERIES[0]), tools)
    shared_by_all = min(
        next(i for i, (a, b) in enumerate(zip(prompt, warm.prompt_ids(chat(q), tools))) if a != b) for q in QUERIES[1:]
    )
    assert warm.cached_prefix_tokens >= shared_by_all * (len(QUERIES) - 1) > 500
    assert cold.cached_prefix_tokens == 0 and cold.prefix_cache is None


def test_an_episodes_next_turn_reuses_all_of_its_last_prompt(tiny_model_path, cold, harness_chat):
    chat, tools = harness_chat
    warm = LocalModel(f"local:{tiny_model_path}", max_batch=1)
    settings = GenerationSettings(max_tokens=16)
    first = chat("how much is P012?")
    warm.generate(first, tools, settings)
    before = warm.cached_prefix_tokens
    second = [
        *first,
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "load_skill", "arguments": '{"name": "explain_price"}'}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "Rules: quote the live price from get_promotions."},
    ]  # fmt: skip
    got = warm.generate(second, tools, settings)
    assert warm.cached_prefix_tokens - before >= len(warm.prompt_ids(first, tools)) - 1
    assert got.completion_token_ids == cold.generate(second, tools, settings).completion_token_ids


def test_the_cache_keeps_the_longest_prefix_and_drops_the_least_recently_used_past_its_budget():
    import torch

    def layers(n: int) -> list:
        return [(torch.zeros(1, 1, n, 4), torch.zeros(1, 1, n, 4))]  # 2 × n × 4 floats = 32 n bytes

    cache = PrefixCache(max_bytes=32 * 300)
    a = list(range(200))
    cache.store(a[:100], layers(100))
    cache.store(a, layers(200))  # extends the first: replaces it
    n, got = cache.lookup(a[:150] + [999])
    assert n == 150 and got[0][0].shape[-2] == 150
    b = [7] * 200
    cache.store(b, layers(200))  # over budget: the older entry goes
    assert cache.lookup(a)[0] == 0 and cache.lookup(b)[0] == 200
    assert cache.lookup([7] * (MIN_SHARED_PREFIX - 1) + [1]) == (0, [])


def test_batched_turns_each_resume_their_own_episode_and_write_what_they_write_alone(
    tiny_model_path, cold, harness_chat
):
    from concurrent.futures import ThreadPoolExecutor

    chat, tools = harness_chat
    warm = LocalModel(f"local:{tiny_model_path}", max_batch=4, gather_s=0.5)
    settings = GenerationSettings(max_tokens=12)
    firsts = [chat(q) for q in QUERIES]

    def in_threads(chats):
        with ThreadPoolExecutor(len(chats)) as pool:
            return list(pool.map(lambda c: warm.generate(c, tools, settings), chats))

    in_threads(firsts)
    # each episode goes on with its own tool result, of its own length: rows cached to different depths
    seconds = [
        [
            *c,
            {"role": "assistant", "content": "One moment."},
            {"role": "user", "content": "and " * (i + 1) + "the price?"},
        ]
        for i, c in enumerate(firsts)
    ]
    before = warm.cached_prefix_tokens
    got = in_threads(seconds)
    assert warm.batch_stats.sizes.get(4, 0) >= 2
    assert warm.cached_prefix_tokens - before >= sum(len(warm.prompt_ids(c, tools)) for c in firsts) - len(firsts)
    for c, g in zip(seconds, got):
        assert g.completion_token_ids == cold.generate(c, tools, settings).completion_token_ids
