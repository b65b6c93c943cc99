"""Paraphrasing through an LLM (litellm), with an on-disk cache: ``--paraphraser litellm:<model>``.

The model call goes through :class:`harnessctl.models.litellm_backend.LiteLLMModel`, so API keys
come from the environment only (litellm's provider variables, or a dummy key for a local
server) and never reach the cache, a manifest or a log. Each answer is cached under a hash of
the model and the exact prompt; a failed call raises :class:`~harnessctl.models.base.ModelError`
and is never cached, so a rerun asks again. An answer that loses a protected span (a template,
an identifier, a number, a quoted example) is not used: the offline paraphrase is, and
``fallbacks`` counts it.

Held-out and training paraphrases ask for different styles (each split has its own style
pool), but an LLM's wording cannot be guaranteed disjoint the way the offline lexicon's is.

>>> p = LiteLLMParaphraser("openai/gpt-4o-mini", cache_dir=".harnessctl/cache/paraphrase")   # doctest: +SKIP
>>> p.paraphrase("Call {{ tool.promotions }} first.", kind="rule", rng=random.Random(0),
...              split="train", strength=0.5)                                                 # doctest: +SKIP
'First, use {{ tool.promotions }}.'
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harnessctl.models.base import GenerationSettings
from harnessctl.models.litellm_backend import LiteLLMModel

from .paraphrase import LexiconParaphraser, keeps_protected, protected_spans
from .vocab import check_split, vocabulary

DEFAULT_CACHE_DIR = Path(".harnessctl") / "cache" / "paraphrase"
_KIND_WORDS = {
    "rule": "rule of a shopping assistant's skill",
    "description": "short description of a tool or skill",
    "param": "description of a tool parameter",
}
_SYSTEM = (
    "You rewrite short instructions for an AI shopping assistant. Keep the meaning exactly. "
    "Copy every {{ ... }} placeholder, identifier, number, price and quoted text unchanged. "
    "Answer with the rewritten text only, on one line, without quotes."
)


class LiteLLMParaphraser:
    """Paraphrases with a litellm model; ``backend`` replaces the model client (tests, trainers)."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        cache_dir: str | Path | None = None,
        temperature: float = 0.7,
        max_tokens: int = 200,
        backend: Any = None,
        extra: dict[str, Any] | None = None,
    ):
        self.model = model
        self.name = f"litellm:{model}"
        self.api_base = api_base
        self.cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._backend = backend
        self._extra = dict(extra or {})
        self._fallback = LexiconParaphraser()
        self.calls = 0  # model calls made (cache misses)
        self.fallbacks = 0  # answers refused because they lost a protected span

    def _client(self) -> Any:
        if self._backend is None:
            self._backend = LiteLLMModel(self.model, api_base=self.api_base, extra=self._extra)
        return self._backend

    def prompt(self, text: str, *, kind: str, style: str, protect: Iterable[str] = ()) -> list[dict[str, str]]:
        """The chat messages sent for one paraphrase (they are also the cache key)."""
        keep = protected_spans(text, protect)
        note = f"\nKeep these exactly: {', '.join(keep)}" if keep else ""
        user = f"Rewrite this {_KIND_WORDS.get(kind, 'text')} {style}:{note}\n\n{text}"
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def _cache_path(self, messages: list[dict[str, str]]) -> Path:
        key = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature}, sort_keys=True)
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        return self.cache_dir / digest[:2] / f"{digest}.json"

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The model's answer to ``messages``, from the cache when it has been asked before."""
        path = self._cache_path(messages)
        if path.is_file():
            try:
                return str(json.loads(path.read_text(encoding="utf-8"))["response"])
            except (OSError, ValueError, KeyError):
                pass  # a damaged entry is asked again

        settings = GenerationSettings(temperature=self.temperature, max_tokens=self.max_tokens)
        response = self._client().generate(messages, [], settings)  # raises ModelError: never cached
        self.calls += 1
        text = (response.content or "").strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps({"model": self.model, "messages": messages, "response": text}, ensure_ascii=False),
            encoding="utf-8",
        )
        tmp.replace(path)
        return text

    def paraphrase(
        self,
        text: str,
        *,
        kind: str,
        rng: random.Random,
        split: str,
        strength: float,
        protect: Iterable[str] = (),
    ) -> str:
        protect = list(protect)
        styles = vocabulary(check_split(split)).llm_styles
        style = styles[rng.randrange(len(styles))]
        fallback_seed = rng.getrandbits(63)
        answer = _clean(self.complete(self.prompt(text, kind=kind, style=style, protect=protect)))
        if answer and "\n" not in answer and keeps_protected(text, answer, protect):
            return answer
        self.fallbacks += 1
        return self._fallback.paraphrase(
            text, kind=kind, rng=random.Random(fallback_seed), split=split, strength=strength, protect=protect
        )


def _clean(answer: str) -> str:
    answer = answer.strip()
    if len(answer) >= 2 and answer[0] == answer[-1] and answer[0] in "\"'":
        answer = answer[1:-1].strip()
    return answer
