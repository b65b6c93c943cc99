"""Paraphrasers keep what a text asks for: templates, names, numbers; the LLM path is cached."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harnessctl.augment.llm_paraphrase import LiteLLMParaphraser
from harnessctl.augment.paraphrase import LexiconParaphraser, keeps_protected, make_paraphraser, protected_spans
from harnessctl.models.base import ModelError
from harnessctl.runtime.record import ModelResponse

RULE = 'Call {{ tool.stock_check }} with order "LM123456", never quote more than $19.90 or 20% to a viewer via get_stock.'


def test_protected_spans_are_templates_quotes_numbers_and_identifiers():
    assert protected_spans(RULE) == ["{{ tool.stock_check }}", '"LM123456"', "$19.90", "20%", "get_stock"]
    assert protected_spans("tell the viewer about search", protect=["search"]) == ["search"]


def test_the_offline_paraphraser_is_deterministic_and_keeps_every_protected_span():
    p = LexiconParaphraser()
    outputs = set()
    for seed in range(40):
        a = p.paraphrase(RULE, kind="rule", rng=random.Random(seed), split="train", strength=1.0)
        b = p.paraphrase(RULE, kind="rule", rng=random.Random(seed), split="train", strength=1.0)
        assert a == b
        assert keeps_protected(RULE, a)
        outputs.add(a)
    assert len(outputs) > 10 and RULE not in outputs


def test_articles_agree_with_the_substituted_word():
    p = LexiconParaphraser()
    for seed in range(60):
        out = p.paraphrase("show a product to a viewer", kind="param", rng=random.Random(seed), split="train", strength=1.0)
        assert " a item" not in out and " a article" not in out and " a audience" not in out and " a offering" not in out


def test_unknown_paraphraser_and_kind_are_refused():
    with pytest.raises(ValueError, match="litellm:<model>"):
        make_paraphraser("gpt4")
    with pytest.raises(ValueError, match="kind"):
        LexiconParaphraser().paraphrase("x", kind="poem", rng=random.Random(0), split="train", strength=1)


class _Server(ThreadingHTTPServer):
    hits = 0


def _serve(reply):
    """An OpenAI-compatible chat endpoint on loopback; ``reply(user_text) -> str``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.server.hits += 1
            self.server.auth = self.headers.get("Authorization")
            text = body["messages"][-1]["content"].rsplit("\n\n", 1)[-1]
            data = json.dumps({
                "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply(text)}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_litellm_paraphrases_through_a_local_server_once_then_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
    server = _serve(lambda text: "Before replying, " + text[0].lower() + text[1:])
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        text = "Call {{ tool.promotions }} and give the code."
        p = make_paraphraser("litellm:openai/para", cache_dir=str(tmp_path), api_base=base)
        first = p.paraphrase(text, kind="rule", rng=random.Random(1), split="train", strength=0.5)
        assert first == "Before replying, call {{ tool.promotions }} and give the code."
        assert server.hits == 1 and server.auth == "Bearer sk-test-secret-123"
        again = make_paraphraser("litellm:openai/para", cache_dir=str(tmp_path), api_base=base)
        assert again.paraphrase(text, kind="rule", rng=random.Random(1), split="train", strength=0.5) == first
        assert server.hits == 1  # answered from the on-disk cache
        cached = "".join(f.read_text() for f in tmp_path.rglob("*.json"))
        assert "openai/para" in cached and "sk-test-secret" not in cached
    finally:
        server.shutdown()


class _Flaky:
    """A model client that fails once, then answers; or answers without the placeholder."""

    name = "flaky"

    def __init__(self, answers):
        self.answers = list(answers)

    def generate(self, messages, tools, settings):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return ModelResponse(content=answer)


def test_a_failed_call_is_never_cached_and_a_broken_answer_falls_back_offline(tmp_path):
    text = "Call {{ tool.promotions }} first."
    client = _Flaky([ModelError("openai/x: 500 from the server"), "Use {{ tool.promotions }} before anything."])
    p = LiteLLMParaphraser("openai/x", cache_dir=tmp_path, backend=client)
    with pytest.raises(ModelError):
        p.paraphrase(text, kind="rule", rng=random.Random(0), split="train", strength=0.5)
    assert not list(tmp_path.rglob("*.json"))
    assert p.paraphrase(text, kind="rule", rng=random.Random(0), split="train", strength=0.5) == "Use {{ tool.promotions }} before anything."
    broken = LiteLLMParaphraser("openai/y", cache_dir=tmp_path, backend=_Flaky(["Use the promotions tool first."]))
    out = broken.paraphrase(text, kind="rule", rng=random.Random(0), split="train", strength=1.0)
    assert "{{ tool.promotions }}" in out and broken.fallbacks == 1
