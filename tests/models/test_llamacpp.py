"""The llama.cpp backend: GGUF export and back, greedy tokens equal to transformers', prefix reuse
across an episode's turns, and the embedded server answering through it with tool calls.

The model is the two-layer test Llama (``small_base``), exported in F32 so both engines compute the
same function; one copy is taught a single tool-calling turn so that it writes a real call.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.gguf_export import export_gguf, read_gguf_meta
from harnessctl.models.llamacpp import LlamaCppModel
from harnessctl.models.local import LocalModel
from harnessctl.models.server import serve_in_background

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "check_stock",
            "description": "units left of a product",
            "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}}},
        },
    }
]
QUESTION = [{"role": "system", "content": "You sell jackets."}, {"role": "user", "content": "is P012 in stock?"}]
CALL = '<tool_call>{"name": "check_stock", "arguments": {"product_id": "P012"}}</tool_call>'
GREEDY = GenerationSettings(max_tokens=16)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    # exports made on demand (llamacpp:FOLDER) go to a cache of the test's own
    monkeypatch.setenv("HARNESSCTL_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def small_gguf(small_base, tmp_path_factory) -> Path:
    return export_gguf(small_base, tmp_path_factory.mktemp("gguf") / "small.f32.gguf", qtype="f32").path


@pytest.fixture(scope="module")
def taught(small_base, tmp_path_factory) -> Path:
    """``small_base`` trained for a few seconds to answer QUESTION with CALL: a model whose greedy
    reply is a tool call, saved as a plain folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(small_base)
    model = AutoModelForCausalLM.from_pretrained(small_base, dtype=torch.float32)
    rendered = tokenizer.apply_chat_template(
        QUESTION, tools=TOOLS, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    prompt = list(rendered["input_ids"])
    target = tokenizer(CALL, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = torch.tensor([prompt + target])
    labels = ids.clone()
    labels[0, : len(prompt)] = -100
    torch.manual_seed(0)
    optim = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(200):
        loss = model(input_ids=ids, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    model.eval()
    folder = tmp_path_factory.mktemp("taught") / "taught"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_export_and_back_keeps_every_weight(small_base, small_gguf, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from harnessctl.models.bases import convert_gguf

    meta = read_gguf_meta(small_gguf)
    assert meta["chat_template"] and meta["fingerprint"].startswith("sha256:")
    back = convert_gguf(small_gguf, tmp_path / "back")
    a = AutoModelForCausalLM.from_pretrained(small_base, dtype=torch.float32).state_dict()
    b = AutoModelForCausalLM.from_pretrained(back, dtype=torch.float32).state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_export_refuses_what_it_cannot_write(tiny_model_path, small_base, tmp_path):
    with pytest.raises(ModelError, match="Llama-architecture"):
        export_gguf(tiny_model_path, tmp_path / "tiny.gguf")  # a Qwen3
    with pytest.raises(ModelError, match="--type"):
        export_gguf(small_base, tmp_path / "x.gguf", qtype="q4_0")


def test_greedy_tokens_equal_transformers_turn_after_turn(small_base):
    llama = LlamaCppModel(f"llamacpp:{small_base}", qtype="f32", threads=1)
    local = LocalModel(f"local:{small_base}", max_batch=1)
    messages = list(QUESTION)
    for turn in range(3):
        ours, theirs = llama.generate(messages, TOOLS, GREEDY), local.generate(messages, TOOLS, GREEDY)
        assert ours.prompt_token_ids == theirs.prompt_token_ids
        assert ours.completion_token_ids == theirs.completion_token_ids, f"turn {turn}"
        assert (ours.content, ours.finish_reason) == (theirs.content, theirs.finish_reason)
        messages += [{"role": "assistant", "content": ours.content}, {"role": "user", "content": f"and P00{turn}?"}]


def test_an_episode_reuses_its_earlier_turn(small_gguf):
    llama = LlamaCppModel(f"llamacpp:{small_gguf}", threads=1)
    evaluated: list[int] = []
    inner = llama.llm.eval
    llama.llm.eval = lambda tokens: (evaluated.append(len(tokens)), inner(tokens))[1]
    first = llama.generate(QUESTION, TOOLS, GREEDY)
    evaluated.clear()
    follow = [*QUESTION, {"role": "assistant", "content": first.content}, {"role": "user", "content": "thanks"}]
    second = llama.generate(follow, TOOLS, GREEDY)
    before = first.prompt_token_ids + first.completion_token_ids  # what llama.cpp's KV cache holds
    shared = next(i for i, (a, b) in enumerate(zip(before + [-1], second.prompt_token_ids)) if a != b)
    assert shared >= len(first.prompt_token_ids)  # the whole first prompt, at least
    assert evaluated[0] == len(second.prompt_token_ids) - shared  # only the new tokens were computed
    assert llama.cached_prefix_tokens == shared


def test_served_through_llamacpp_answers_with_a_tool_call(taught):
    llama = LlamaCppModel(f"llamacpp:{taught}", qtype="f32", threads=1)
    assert llama.generate(QUESTION, TOOLS, GenerationSettings(max_tokens=48)).tool_calls[0].name == "check_stock"
    url, stop = serve_in_background(llama)
    try:
        body = {"model": "taught", "messages": QUESTION, "tools": TOOLS, "max_tokens": 48}
        request = urllib.request.Request(
            f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
    finally:
        stop()
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("check_stock", {"product_id": "P012"})


def test_registry_and_cli(small_base, tmp_path):
    from harnessctl.models.registry import resolve_model

    out = tmp_path / "small.gguf"
    result = CliRunner().invoke(app, ["model", "export-gguf", str(small_base), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tokenizer_from"] == "hf"
    assert resolve_model(f"llamacpp:{out}").generate(QUESTION, TOOLS, GenerationSettings(max_tokens=4)).prompt_tokens
    bad = CliRunner().invoke(app, ["model", "export-gguf", str(small_base), "--out", str(out), "--type", "q2"])
    assert bad.exit_code == 2 and "--type q2" in bad.output


def test_without_llama_cpp_the_message_says_how_to_install(small_gguf, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ModelError, match=r"pip install 'harnessctl\[llamacpp\]'"):
        LlamaCppModel(f"llamacpp:{small_gguf}")
