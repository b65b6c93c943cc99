"""Paraphrasers keep what a text asks for: templates, names, numbers; the LLM path is cached."""

from __future__ import annotations

import json
import random
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harnessctl.augment.llm_paraphrase import LiteLLMParaphraser
from harnessctl.augment.paraphrase import LexiconParaphraser, keeps_protected, protected_spans
from harnessctl.augment.paraphrasers import make_paraphraser
from harnessctl.models.base import ModelError
from harnessctl.models.types import ModelResponse

RULE = (
    'Call {{ tool.stock_check }} with order "LM123456", never quote more than $19.90 or 20% to a viewer via get_stock.'
)


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
        out = p.paraphrase(
            "show a product to a viewer", kind="param", rng=random.Random(seed), split="train", strength=1.0
        )
        assert (
            " a item" not in out and " a article" not in out and " a audience" not in out and " a offering" not in out
        )


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
            data = json.dumps(
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply(text)}}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
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
    assert (
        p.paraphrase(text, kind="rule", rng=random.Random(0), split="train", strength=0.5)
        == "Use {{ tool.promotions }} before anything."
    )
    broken = LiteLLMParaphraser("openai/y", cache_dir=tmp_path, backend=_Flaky(["Use the promotions tool first."]))
    out = broken.paraphrase(text, kind="rule", rng=random.Random(0), split="train", strength=1.0)
    assert "{{ tool.promotions }}" in out and broken.fallbacks == 1


# -- meaning survives: every shipped text, many seeds, both vocabularies ----------------------

_NEGATION_RE = re.compile(r"\b(?:never|not|no|none|nothing|without)\b|n't\b", re.IGNORECASE)
_RESTRICTION_RE = re.compile(r"\b(?:only|solely|just|exclusively)\b", re.IGNORECASE)
_LIMIT_RE = re.compile(r"\b(?:at most|no more than|not more than|a maximum of|at the very most)\b", re.IGNORECASE)
_HEDGE_RE = re.compile(r"\b(?:should|may|might|could|ideally|if possible|best practice|try to)\b", re.IGNORECASE)
_TEMPLATE_RE = re.compile(r"\{\{.*?\}\}")
_NUMBER_RE = re.compile(r"[$€£]?\d[\d.,:%]*")
_DOUBLED_RE = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)


def _shipped_texts(harness):
    for s in harness.skills:
        yield "description", s.description
        for r in s.rules:
            yield "rule", r.text
    for t in harness.tools:
        yield "description", t.description
        for spec in (t.parameters.get("properties") or {}).values():
            if spec.get("description"):
                yield "param", spec["description"]


def test_every_paraphrase_of_every_shipped_text_keeps_its_meaning_bearing_words(source):
    """A prohibition stays a prohibition, "only" stays a restriction, a limit stays a limit, no
    hedge ("should", "best practice") softens a rule, and templates and numbers are untouched."""
    p = LexiconParaphraser()
    texts = list(_shipped_texts(source))
    assert sum(kind == "rule" for kind, _ in texts) >= 30
    changed = 0
    for i, (kind, text) in enumerate(texts):
        for split in ("train", "heldout"):
            for seed in range(120):
                out = p.paraphrase(text, kind=kind, rng=random.Random(seed * 7919 + i), split=split, strength=1.0)
                changed += out != text
                where = f"{text!r} -> {out!r}"
                assert len(_NEGATION_RE.findall(out)) >= len(_NEGATION_RE.findall(text)), where
                assert len(_RESTRICTION_RE.findall(out)) >= len(_RESTRICTION_RE.findall(text)), where
                assert len(_LIMIT_RE.findall(out)) == len(_LIMIT_RE.findall(text)), where
                assert len(_HEDGE_RE.findall(out)) == len(_HEDGE_RE.findall(text)), where
                assert _TEMPLATE_RE.findall(out) == _TEMPLATE_RE.findall(text), where
                assert sorted(_NUMBER_RE.findall(out)) == sorted(_NUMBER_RE.findall(text)), where
                assert not _DOUBLED_RE.search(out), where
    assert changed > len(texts) * 2 * 120 * 0.7  # the check is not vacuous: most outputs differ


def test_paraphrases_avoid_wordings_that_read_oddly_or_shift_the_meaning():
    """Regression examples: 'say' never becomes 'note', 'only' never 'merely', 'delivery' never
    'dispatch', 'shortly' (soon) never stands for 'briefly', no frame downgrades a rule."""
    p = LexiconParaphraser()
    rules = [
        "Cosmetics and foods are not medicines; never say a product treats, cures or prevents anything.",
        "State only what the product card says.",
        "Say the status and the expected delivery date.",
        "Apologise once, briefly, without blaming anyone.",
    ]
    odd = re.compile(
        r"\bnote\b(?!:)|\b(?:merely|purely|dispatch|transit|shortly|at no point|at no time|in no case|"
        r"not once|good card|piece of merchandise|best practice|should it be)\b",
        re.IGNORECASE,
    )
    for rule in rules:
        for split in ("train", "heldout"):
            for seed in range(200):
                out = p.paraphrase(rule, kind="rule", rng=random.Random(seed), split=split, strength=1.0)
                assert not odd.search(out), out
