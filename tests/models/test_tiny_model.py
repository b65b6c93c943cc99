"""The tiny model: a tokenizer and chat template designed for what a small model can learn.

Uses the session-wide ``tiny_model_path`` (built once, as `harnessctl model init` builds it).
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from harnessctl.harness import render_harness, render_skill
from harnessctl.models.syllables import SYLLABLES, name_syllables, pronounceable_name, split_pool
from harnessctl.models.tiny_template import tool_line
from harnessctl.models.toolcall_text import format_tool_call
from harnessctl.models.types import ToolCall


@pytest.fixture(scope="module")
def tokenizer(tiny_model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path, local_files_only=True)


def pieces(tokenizer, text: str) -> list[str]:
    return [tokenizer.convert_tokens_to_string([t]) for t in tokenizer.tokenize(text)]


def name_span(tokenizer, text: str, name: str) -> list[str]:
    """The tokens of ``name`` where it occurs in ``text`` (fails if no token boundary matches)."""
    toks = pieces(tokenizer, text)
    for i in range(len(toks)):
        acc = ""
        for j in range(i, len(toks)):
            acc += toks[j]
            if acc == name:
                return toks[i : j + 1]
            if not name.startswith(acc):
                break
    raise AssertionError(f"{name!r} does not start and end on token boundaries in {text!r}: {toks}")


# -- the checkpoint ------------------------------------------------------------------------


def test_folder_loads_with_auto_classes_and_is_small(tiny_model_path, tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, local_files_only=True)
    assert model.config.model_type == "qwen3"
    assert model.config.tie_word_embeddings is True
    assert sum(p.numel() for p in model.parameters()) < 3_000_000
    assert model.config.vocab_size == len(tokenizer)
    assert tokenizer.convert_ids_to_tokens(model.generation_config.eos_token_id) == "<|im_end|>"
    build = json.loads((tiny_model_path / "harnessctl_build.json").read_text())
    assert build["trained"] is False and build["parameters"] == sum(p.numel() for p in model.parameters())


def test_build_is_deterministic_from_the_seed(tmp_path, livecommerce):
    from harnessctl.models.tiny import TinyModelConfig, build_tiny_model

    small = dict(
        hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=2, corpus_conversations=30
    )

    def digest(folder):
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}

    a = build_tiny_model(tmp_path / "a", livecommerce, TinyModelConfig(seed=1, **small))
    b = build_tiny_model(tmp_path / "b", livecommerce, TinyModelConfig(seed=1, **small))
    build_tiny_model(tmp_path / "c", livecommerce, TinyModelConfig(seed=2, **small))
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a")["model.safetensors"] != digest(tmp_path / "c")["model.safetensors"]
    assert a.parameters == b.parameters and a.seconds["total"] > 0
    assert a.corpus_source == "oracle"  # the simulator's episodes, under renamed surfaces too
    with pytest.raises(FileExistsError, match="--force"):
        build_tiny_model(tmp_path / "a", livecommerce, TinyModelConfig(seed=1, **small))


def test_config_mistakes_say_how_to_fix_them():
    from harnessctl.models.tiny import TinyModelConfig

    with pytest.raises(ValueError, match="multiple of num_heads"):
        TinyModelConfig(hidden_size=100, num_heads=3)
    with pytest.raises(ValueError, match="too small"):
        TinyModelConfig(vocab_size=300)


# -- the tokenizer keeps names stable ------------------------------------------------------


def test_every_name_syllable_is_one_token(tokenizer):
    assert all(len(tokenizer.tokenize(s)) == 1 for s in SYLLABLES)


@pytest.mark.parametrize(
    "name",
    [
        "get_product_details",
        "transfer_to_human",
        "load_skill",
        "explain_price",
        "get-product-details",
        "getProductDetails",
        "GetProductDetails",
    ],
)
def test_a_harness_name_tokenises_the_same_in_every_context(tokenizer, name):
    contexts = [
        f"- show the product card of one item : {name}(product_id)",  # the tool list
        '<tool_call>{"name": "' + name + '", "arguments": {}}</tool_call>',  # a call
        f"Call {name} and quote the price.",  # a skill rule
        f"Tools: {name}, check_stock",  # a skill's tool line
        f"{name}\n",
        f"({name})",
    ]
    spans = [name_span(tokenizer, text, name) for text in contexts]
    assert all(s == spans[0] for s in spans), spans
    assert not any(" " in p for p in spans[0])


def test_a_generated_name_tokenises_to_its_syllables_everywhere(tokenizer):
    rng = random.Random(7)
    for _ in range(20):
        name = pronounceable_name(rng, words=(2, 3))
        expected = [p for w in name.split("_") for p in ([*name_syllables(w)] + ["_"])][:-1]
        for text in (f"- find an item : {name}(query)", f'{{"name": "{name}", "arguments": {{}}}}', f"use {name}."):
            assert name_span(tokenizer, text, name) == expected, (name, text)


def test_held_out_syllables_are_a_disjoint_pool():
    train, held_out = split_pool(seed=3)
    assert set(train).isdisjoint(held_out) and set(train) | set(held_out) == set(SYLLABLES)
    name = pronounceable_name(random.Random(0), pool=held_out)
    assert set(name_syllables(name)) <= set(held_out)


def test_prices_are_copied_digit_by_digit(tokenizer):
    assert pieces(tokenizer, "19.90")[:5] == ["1", "9", ".", "9", "0"]


# -- the chat template ---------------------------------------------------------------------


def test_tools_are_listed_compactly_description_before_name(tokenizer, livecommerce):
    rendered = render_harness(livecommerce)
    messages = [{"role": "system", "content": rendered.system_prompt}, {"role": "user", "content": "how much?"}]
    text = tokenizer.apply_chat_template(messages, tools=rendered.tools, tokenize=False, add_generation_prompt=True)
    lines = text.split("Tools:\n", 1)[1].split("<|im_end|>", 1)[0].split("\n")
    assert lines == [tool_line(t) for t in rendered.tools]
    assert (
        lines[3] == "- show the product card of one item with prices and attributes : get_product_details(product_id)"
    )
    assert "- estimate delivery days and shipping fee to a region : estimate_shipping(region, product_id?)" in lines
    assert text.endswith("<|im_start|>assistant\n")
    compact = len(tokenizer("Tools:\n" + "\n".join(lines))["input_ids"])
    as_json = len(tokenizer("\n".join(json.dumps(t) for t in rendered.tools))["input_ids"])  # the usual listing
    assert compact * 3 < as_json


def conversation(livecommerce):
    rendered = render_harness(livecommerce)
    call1 = ToolCall(name="load_skill", arguments={"name": "explain_price"})
    call2 = ToolCall(name="get_product_details", arguments={"product_id": "P012"})
    messages = [
        {"role": "system", "content": rendered.system_prompt},
        {"role": "user", "content": "how much is it?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": call1.name, "arguments": call1.arguments}}],
        },
        {"role": "tool", "content": render_skill(livecommerce, livecommerce.skill("price_promo"))},
        {
            "role": "assistant",
            "content": "One sec!",
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": call2.name, "arguments": json.dumps(call2.arguments)},
                }
            ],
        },
        {"role": "tool", "content": '{"price": "19.90"}'},
        {"role": "assistant", "content": "It is $19.90 live!", "reasoning_content": "price from the card"},
    ]
    written = [
        format_tool_call(call1) + "<|im_end|>",
        "One sec!" + format_tool_call(call2) + "<|im_end|>",
        "<think>price from the card</think>It is $19.90 live!<|im_end|>",
    ]
    return messages, rendered.tools, written


def test_tool_calls_render_exactly_as_the_parser_reads_them(tokenizer, livecommerce):
    messages, tools, written = conversation(livecommerce)
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    for w in written:
        assert f"<|im_start|>assistant\n{w}\n" in text


def test_assistant_mask_covers_exactly_what_the_model_writes(tokenizer, livecommerce):
    messages, tools, written = conversation(livecommerce)
    out = tokenizer.apply_chat_template(messages, tools=tools, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = out["input_ids"], out["assistant_masks"]
    assert 0 < sum(mask) < len(ids)
    runs, current = [], []
    for i, m in zip(ids, mask):
        if m:
            current.append(i)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    assert [tokenizer.decode(r) for r in runs] == written


def test_template_passes_trls_training_checks(tokenizer):
    from trl.chat_template_utils import (
        has_generation_markers,
        is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained,
        supports_tool_calling,
    )

    assert has_generation_markers(tokenizer.chat_template)
    assert is_chat_template_prefix_preserving(tokenizer)
    assert is_chat_template_stop_token_trained(tokenizer)
    assert supports_tool_calling(tokenizer)


def test_parse_response_reads_a_turn(tokenizer):
    turn = 'Sure<tool_call>{"name": "check_stock", "arguments": {"product_id": "P1"}}</tool_call><|im_end|>'
    parsed = tokenizer.parse_response(turn, prefix="<|im_start|>assistant\n")
    assert parsed["content"] == "Sure"
    assert parsed["tool_calls"][0]["function"] == {"name": "check_stock", "arguments": {"product_id": "P1"}}


def test_a_one_word_name_is_stable_between_the_call_and_its_code_mentions(tokenizer):
    # One-word names keep their leading space in running prose (" manda"), like any word;
    # generated names therefore always have two words or more.
    assert name_span(tokenizer, '{"name": "manda"}', "manda") == name_span(tokenizer, "(manda)", "manda")


def test_no_token_glues_a_marker_to_its_neighbours(tokenizer):
    glued = [
        t
        for t in tokenizer.get_vocab()
        if any(m in t and m != t for m in ("<tool_call>", "</tool_call>", "<|im_end|>"))
    ]
    assert glued == []
    assert not any(t.endswith("</") for t in tokenizer.get_vocab())


def test_markers_are_single_tokens_kept_when_decoding(tokenizer):
    for marker in ("<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_start|>", "<|im_end|>"):
        assert len(tokenizer.tokenize(marker)) == 1
    ids = tokenizer('<tool_call>{"name": "a"}</tool_call><|im_end|>')["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == '<tool_call>{"name": "a"}</tool_call>'


def test_a_corpus_can_be_synthesised_from_the_harness_alone(livecommerce):
    from harnessctl.models.tiny_corpus import build_corpus, render_conversations

    conversations, source = build_corpus(livecommerce, n=12, seed=0, source="harness")
    assert source == "harness" and len(conversations) == 12
    texts = list(render_conversations(conversations))
    assert all(t.startswith("<|im_start|>system\n") and "Tools:\n- " in t and "<tool_call>{" in t for t in texts)
    # Most conversations rename the surfaces; some keep the harness's own names.
    canonical = sum("get_product_details" in t or "load_skill(" in t for t in texts)
    assert 0 < canonical < len(texts)


def test_the_default_model_is_configured_then_trained_then_oracle(tmp_path):
    from harnessctl.models.registry import DEFAULT_MODEL_DIR, default_model_spec

    none = tmp_path / "none"  # nothing shipped in the package
    assert default_model_spec(environ={}, root=tmp_path, shipped=none) == "oracle"
    (tmp_path / DEFAULT_MODEL_DIR).mkdir(parents=True)
    (tmp_path / DEFAULT_MODEL_DIR / "config.json").write_text("{}")
    assert default_model_spec(environ={}, root=tmp_path, shipped=none) == f"local:{tmp_path / DEFAULT_MODEL_DIR}"
    assert default_model_spec(environ={"HARNESSCTL_MODEL": "openai/mia"}, root=tmp_path) == "openai/mia"
