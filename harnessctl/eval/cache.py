"""A persistent cache of model calls, and the retrying, caching wrapper the eval runner puts
around any model backend.

The key is everything that decides the answer: the model string, the endpoint, the messages,
the tool specs and the generation settings (the timeout excluded: it changes when an answer
comes, not what it says). Only successful responses are stored — an error is never cached, so
a flaky endpoint is asked again next time. Storage is one SQLite file (WAL mode, safe for
several threads and processes).

>>> cache = CallCache(":memory:")
>>> key = call_key("openai/m", None, [{"role": "user", "content": "hi"}], [], GenerationSettings())
>>> cache.get(key) is None
True
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harnessctl.models.base import GenerationSettings, ModelError, agenerate, bind_model, cache_identity, cacheable
from harnessctl.models.types import ModelResponse, ToolCall

CACHE_SCHEMA = 1


def call_key(
    model: str,
    api_base: str | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    settings: GenerationSettings,
) -> str:
    """The cache key of one model call (a SHA-256 hex digest)."""
    s = asdict(settings)
    s.pop("timeout_s", None)
    payload = {
        "v": CACHE_SCHEMA,
        "model": model,
        "api_base": api_base or "",
        "messages": messages,
        "tools": tools,
        "settings": s,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


#: Files of a model folder that decide its answers (weights, config, tokenizer, chat template).
_MODEL_FILE_SUFFIXES = (".safetensors", ".bin", ".json", ".jinja", ".model", ".txt", ".tiktoken", ".pt")
#: Files larger than this are fingerprinted by size, time and their first and last MiB.
_FULL_HASH_BYTES = 256 * 1024 * 1024
_fingerprints: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def folder_fingerprint(folder: str | Path) -> str:
    """A SHA-256 (16 hex digits) over the names and contents of the files of a model folder that
    decide its answers: a checkpoint retrained into the same folder gets a new fingerprint.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "config.json").write_text("{}")
    >>> len(folder_fingerprint(d))
    16
    """
    folder = Path(folder)
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix in _MODEL_FILE_SUFFIXES and p.name != "train.json"
    )
    stats = tuple((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    memo = (str(folder.resolve()), stats)
    if memo in _fingerprints:
        return _fingerprints[memo]
    digest = hashlib.sha256()
    for path, (rel, size, mtime) in zip(files, stats):
        digest.update(f"{rel}\0{size}\0".encode())
        with open(path, "rb") as f:
            if size <= _FULL_HASH_BYTES:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            else:  # a multi-GB shard: its size, time and ends stand for it
                digest.update(f"{mtime}".encode() + f.read(1 << 20))
                f.seek(-(1 << 20), 2)
                digest.update(f.read())
    _fingerprints[memo] = digest.hexdigest()[:16]
    return _fingerprints[memo]


def model_identity(backend: Any) -> str:
    """What the cache key calls a model: the identity it declares (:func:`cache_identity`: the
    harness-blind reference's memorised surface), else its name, plus the fingerprint of its
    files for an in-process ``local:`` checkpoint (whose name is only a path).

    >>> model_identity(type("M", (), {"name": "openai/tiny"})())
    'openai/tiny'
    """
    declared = cache_identity(backend)
    if declared:
        return declared
    name = getattr(backend, "name", type(backend).__name__)
    path = getattr(backend, "path", None)
    if isinstance(name, str) and name.startswith("local:") and path is not None and Path(path).is_dir():
        return f"{name}#{folder_fingerprint(path)}"
    return name


def response_to_json(r: ModelResponse) -> str:
    return json.dumps(asdict(r), ensure_ascii=False, separators=(",", ":"))


def response_from_json(text: str) -> ModelResponse:
    d = json.loads(text)
    d["tool_calls"] = [ToolCall(**c) for c in d.get("tool_calls", [])]
    return ModelResponse(**d)


class CallCache:
    """Model responses by :func:`call_key`, in one SQLite file.

    >>> c = CallCache(":memory:"); c.put("k", ModelResponse(content="hello")); c.get("k").content
    'hello'
    """

    def __init__(self, path: str | Path):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, response TEXT NOT NULL, created REAL NOT NULL)"
        )
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> ModelResponse | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return response_from_json(row[0])

    def put(self, key: str, response: ModelResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls (key, response, created) VALUES (?, ?, ?)",
                (key, response_to_json(response), time.time()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


#: Exception type names that mean "the transport failed, asking again may work".
_TRANSPORT_ERRORS = (
    "APIConnectionError",
    "Timeout",
    "TimeoutError",
    "ConnectionError",
    "ConnectError",
    "ReadTimeout",
    "ServiceUnavailableError",
    "InternalServerError",
    "RateLimitError",
    "APIError",
    "ConnectionResetError",
)


def is_transport_error(exc: BaseException) -> bool:
    """True for errors worth a retry (connection, timeout, 5xx, rate limit), looking through
    ``ModelError`` to its cause."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 5:
        if isinstance(e, (ConnectionError, TimeoutError, asyncio.TimeoutError)):
            return True
        if type(e).__name__ in _TRANSPORT_ERRORS:
            return True
        text = str(e).lower()
        if any(
            s in text
            for s in ("connection", "timed out", "timeout", " 500", " 502", " 503", " 504", "status 5", "rate limit")
        ):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


class EvalBackend:
    """Wraps a model backend for evaluation: cache lookups, retries on transport errors with
    exponential backoff, and a count of cache hits per episode.

    The oracle (or any backend with ``cacheable = False``) skips the cache: it is cheaper to
    run than to look up.

    >>> class Echo:
    ...     name = "echo"
    ...     def generate(self, messages, tools, settings): return ModelResponse(content="hi")
    ...     def for_episode(self, case, harness): return self
    >>> b = EvalBackend(Echo(), cache=CallCache(":memory:"))
    >>> b.generate([{"role": "user", "content": "x"}], [], GenerationSettings()).content
    'hi'
    >>> b.generate([{"role": "user", "content": "x"}], [], GenerationSettings()).content, b.cache_hits
    ('hi', 1)
    """

    def __init__(
        self,
        inner: Any,
        *,
        cache: CallCache | None = None,
        api_base: str | None = None,
        retries: int = 2,
        backoff_s: float = 0.5,
        identity: str | None = None,
    ):
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.cache = cache if cacheable(inner) else None
        self.identity = identity or (model_identity(inner) if self.cache is not None else self.name)
        self._bound = False
        self.api_base = api_base
        self.retries = retries
        self.backoff_s = backoff_s
        self.calls = 0
        self.cache_hits = 0

    def for_episode(self, case: Any, harness: Any) -> EvalBackend:
        """A wrapper bound to one episode, with its own call and hit counts. Binding a bound
        wrapper again (the runtime does) returns it, so its counts are the episode's. The answer
        key reaches the inner backend only when it is the oracle (see ``bind_model``)."""
        if self._bound:
            return self
        bound = bind_model(self.inner, case, harness)
        wrapped = EvalBackend(
            bound,
            cache=self.cache,
            api_base=self.api_base,
            retries=self.retries,
            backoff_s=self.backoff_s,
            identity=self.identity,
        )
        wrapped._bound = True
        return wrapped

    def __getattr__(self, item: str) -> Any:
        # Anything else the runtime asks of a backend (e.g. a tokenizer) comes from the inner one.
        if item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)

    def _key(self, messages, tools, settings) -> str | None:
        return call_key(self.identity, self.api_base, messages, tools, settings) if self.cache is not None else None

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        self.calls += 1
        key = self._key(messages, tools, settings)
        if key is not None and (hit := self.cache.get(key)) is not None:
            self.cache_hits += 1
            return hit
        attempt = 0
        while True:
            try:
                response = self.inner.generate(messages, tools, settings)
                break
            except Exception as e:  # noqa: BLE001 - retried or re-raised below
                if attempt >= self.retries or not is_transport_error(e):
                    raise
                time.sleep(self.backoff_s * (2**attempt))
                attempt += 1
        if key is not None:
            self.cache.put(key, response)
        return response

    async def agenerate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        self.calls += 1
        key = self._key(messages, tools, settings)
        if key is not None and (hit := self.cache.get(key)) is not None:
            self.cache_hits += 1
            return hit
        attempt = 0
        while True:
            try:
                response = await agenerate(self.inner, messages, tools, settings)
                break
            except Exception as e:  # noqa: BLE001 - retried or re-raised below
                if attempt >= self.retries or not is_transport_error(e):
                    raise
                await asyncio.sleep(self.backoff_s * (2**attempt))
                attempt += 1
        if key is not None:
            self.cache.put(key, response)
        return response


__all__ = ["CallCache", "EvalBackend", "ModelError", "call_key", "is_transport_error"]
