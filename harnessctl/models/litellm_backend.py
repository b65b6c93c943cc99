"""Served models through litellm: any provider string, the same path in a test as in production.

``openai/<name>`` with ``api_base`` reaches vLLM, the embedded server (``harnessctl serve``) or
any OpenAI-compatible endpoint; ``anthropic/...`` and the other litellm providers work as
litellm documents them.

>>> m = LiteLLMModel("openai/tiny", api_base="http://127.0.0.1:8000/v1")   # doctest: +SKIP
>>> m.generate([{"role": "user", "content": "hi"}], [], GenerationSettings()).content  # doctest: +SKIP
'Hello!'

Behaviour the runtime relies on:

- litellm is imported on first use (it takes seconds), with ``LITELLM_LOCAL_MODEL_COST_MAP``
  set so that it never fetches a price list from the web.
- API keys come from the environment (``api_key_env``, else litellm's own provider variables);
  a local server with no key gets a dummy one. A key is never part of ``name``, ``repr``,
  error messages or records.
- Transport errors, timeouts, 429 and 5xx answers are retried ``max_retries`` times with
  exponential backoff; other 4xx answers are not (retrying a bad request cannot help), nor is a
  refused connection (nothing listens there; a retry finds nobody either). Exhausted retries
  raise :class:`ModelError` naming the model, the endpoint and the cause.
- A connection must be made within :data:`CONNECT_TIMEOUT_S`; the reply itself may take the
  whole request timeout (a slow generation is not a dead endpoint). litellm applies the two
  limits apart for the providers whose clients take an ``httpx.Timeout`` (OpenAI-compatible
  ``openai/...``, Azure, Bedrock); the others get the request timeout for both.
- :func:`check_reachable` tells a dead endpoint in a fraction of a second, before litellm is
  imported (which takes seconds).
- ``tool_calls`` become :class:`ToolCall` (arguments parsed; unparsable ones kept raw), and
  ``<tool_call>`` text in the content is parsed too, for servers without a tool-call parser.
- Settings a provider does not take (``seed`` for Anthropic, say) are left out of the request,
  with one logged note per model and setting; the list of what a provider takes is litellm's
  own (``get_supported_openai_params``), and ``drop_params`` lets litellm drop the rest.
- :meth:`LiteLLMModel.preflight` checks an endpoint before a long run: it answers, it serves
  this model name, the key is accepted.
- ``generate`` and ``agenerate`` share no mutable state: one instance serves many threads or
  tasks at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import random
import threading
import time
import warnings
from typing import Any

from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.toolcall_text import parse_tool_calls
from harnessctl.models.types import ModelResponse, ToolCall

#: The key sent to a local server that needs none (OpenAI clients insist on one).
DUMMY_API_KEY = "sk-local-no-key"
#: Providers that speak the OpenAI API, whose endpoint lists the models it serves (``GET /models``).
_OPENAI_COMPATIBLE = ("openai", "hosted_vllm", "openai_like", "custom_openai")
#: Seconds a connection to the endpoint may take to open (the reply may take the request timeout).
CONNECT_TIMEOUT_S = 5.0
#: The settings :meth:`LiteLLMModel._request` sends, checked against what a provider takes.
_OPTIONAL_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "tools")

log = logging.getLogger(__name__)
_noted: set[tuple[str, str]] = set()

_litellm_lock = threading.Lock()
_litellm_module: Any = None


def import_litellm() -> Any:
    """The litellm module, imported once, offline and quiet."""
    global _litellm_module
    if _litellm_module is None:
        with _litellm_lock:
            if _litellm_module is None:
                # Set before the import: litellm fetches a price list from the web at import time.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                os.environ.setdefault("LITELLM_LOG", "ERROR")
                with warnings.catch_warnings():
                    # pydantic warns about litellm's own typed dicts at import; not ours to fix.
                    warnings.simplefilter("ignore")
                    import litellm

                # pydantic warns about litellm's typed dicts when they are first used; not ours to fix.
                warnings.filterwarnings("ignore", message=r".*`ReadOnly` qualifier", category=UserWarning)
                litellm.suppress_debug_info = True  # no "Provider List" banners on stdout
                litellm.telemetry = False
                _litellm_module = litellm
    return _litellm_module


class LiteLLMModel:
    """A model behind litellm. ``model`` is a litellm provider string such as ``openai/tiny``.

    ``extra`` holds provider keyword arguments sent with every call (e.g. ``{"stop": [...]}``);
    per-call ``GenerationSettings.extra`` is merged over it.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        api_key_env: str | None = None,
        timeout_s: float | None = None,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        extra: dict[str, Any] | None = None,
    ):
        if not model or not model.strip():
            raise ModelError("empty model string: use a litellm provider string such as openai/<name>")
        self.name = model
        self.api_base = api_base.rstrip("/") if api_base else None
        self.timeout_s = timeout_s
        self.max_retries = max(0, int(max_retries))
        self.backoff_s = backoff_s
        self.extra = dict(extra or {})
        self.provider = self._check_provider()
        self._api_key = self._find_api_key(api_key, api_key_env)
        self._unsupported = self._unsupported_params()

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r}, api_base={self.api_base!r})"

    def for_episode(self, case: Any, harness: Any) -> LiteLLMModel:
        return self

    # -- calls --------------------------------------------------------------------------------

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        """One chat completion, retried on transient failures. Raises :class:`ModelError`."""
        litellm = import_litellm()
        kwargs = self._request(messages, tools, settings)
        started = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            try:
                raw = litellm.completion(**kwargs)
            except Exception as e:  # noqa: BLE001 - classified below, re-raised as ModelError
                if attempt < self.max_retries and _retryable(e, litellm):
                    time.sleep(self._delay(attempt))
                    continue
                raise self._error(e, attempt + 1) from None
            return _to_response(raw, time.perf_counter() - started)
        raise AssertionError("unreachable")

    async def agenerate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        """Async :meth:`generate` (``litellm.acompletion``)."""
        litellm = import_litellm()
        kwargs = self._request(messages, tools, settings)
        started = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            try:
                raw = await litellm.acompletion(**kwargs)
            except Exception as e:  # noqa: BLE001
                if attempt < self.max_retries and _retryable(e, litellm):
                    await asyncio.sleep(self._delay(attempt))
                    continue
                raise self._error(e, attempt + 1) from None
            return _to_response(raw, time.perf_counter() - started)
        raise AssertionError("unreachable")

    # -- helpers ------------------------------------------------------------------------------

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": [_wire_message(m) for m in messages],
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "timeout": request_timeout(self.timeout_s if self.timeout_s is not None else settings.timeout_s),
            # Retries are ours (counted, with backoff, never on 4xx); the client must not add its own.
            "max_retries": 0,
            "num_retries": 0,
        }
        if settings.top_p != 1.0:
            kwargs["top_p"] = settings.top_p
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        if tools:
            kwargs["tools"] = tools
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        kwargs.update(self.extra)
        kwargs.update(settings.extra)
        for param in self._unsupported:
            if param in kwargs:
                del kwargs[param]
                if (self.name, param) not in _noted:
                    _noted.add((self.name, param))
                    log.warning("note: %s does not take %r; it is not sent", self.name, param)
        kwargs["drop_params"] = True  # anything else the provider refuses, litellm leaves out
        return kwargs

    def _unsupported_params(self) -> frozenset[str]:
        """The settings this provider does not take, by litellm's own table (empty when litellm
        has no table for it: then ``drop_params`` decides)."""
        litellm = import_litellm()
        model = self.name.split("/", 1)[1] if "/" in self.name else self.name
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pydantic, about litellm's own typed dicts
                supported = litellm.get_supported_openai_params(model=model, custom_llm_provider=self.provider)
        except Exception:  # noqa: BLE001 - a provider litellm has no table for
            supported = None
        if not supported:
            return frozenset()
        return frozenset(p for p in _OPTIONAL_PARAMS if p not in supported)

    # -- preflight ----------------------------------------------------------------------------

    def preflight(self, settings: GenerationSettings | None = None) -> None:
        """Check that this model can be called at all, before a run of many cases: the endpoint
        answers, serves this model name and takes the key. An OpenAI-compatible endpoint is asked
        for its model list (cheap; the message names what it serves); any other provider gets
        one short completion. Raises :class:`ModelError` saying what to fix.

        >>> LiteLLMModel("openai/mia", api_base="http://127.0.0.1:8765/v1").preflight()   # doctest: +SKIP
        ModelError: openai/mia: the server at http://127.0.0.1:8765/v1 serves 'tiny', not 'mia'; pass --model openai/tiny
        """
        settings = settings or GenerationSettings()
        if self.api_base is not None:
            if not self.api_base.startswith(("http://", "https://")):
                raise ModelError(f"--api-base {self.api_base!r} is not a URL; expected e.g. http://127.0.0.1:8000/v1")
            if self.provider in _OPENAI_COMPATIBLE:
                served = self._served_models(settings)
                if served is not None:
                    wanted = self.name.split("/", 1)[1]
                    if wanted not in served:
                        listing = ", ".join(repr(m) for m in served[:10]) or "no model"
                        hint = f"; pass --model {self.provider}/{served[0]}" if served else ""
                        raise ModelError(
                            f"{self.name}: the server at {self.api_base} serves {listing}, not {wanted!r}{hint}"
                        )
                    return
        self.generate([{"role": "user", "content": "Hello"}], [], dataclasses.replace(settings, max_tokens=1))

    def _served_models(self, settings: GenerationSettings) -> list[str] | None:
        """The model ids an OpenAI-compatible endpoint lists, or None when it lists none. (The
        standard library's client: one GET, without building an HTTP client and TLS context.)"""
        import urllib.error
        import urllib.request

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        timeout = min(10.0, self.timeout_s or settings.timeout_s)
        request = urllib.request.Request(f"{self.api_base}/models", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as e:
            if e.code in (401, 403):
                raise ModelError(
                    f"{self.name}: the server at {self.api_base} refused the API key (HTTP {e.code}); "
                    "put the key in an environment variable and pass --api-key-env NAME"
                ) from None
            return None  # no model list here: the short completion decides
        except (urllib.error.URLError, OSError, ValueError) as e:
            cause = _first_line(str(getattr(e, "reason", None) or e)) or type(e).__name__
            raise ModelError(_unreachable(self.name, self.api_base, cause)) from None
        try:
            return [str(m["id"]) for m in json.loads(body)["data"]]
        except (ValueError, KeyError, TypeError):
            return None

    def _delay(self, attempt: int) -> float:
        # Exponential backoff with jitter, so concurrent episodes do not retry in lockstep.
        return self.backoff_s * (2**attempt) * (0.5 + random.random() / 2)

    def _error(self, e: Exception, attempts: int) -> ModelError:
        where = f" at {self.api_base}" if self.api_base else ""
        status = getattr(e, "status_code", None)
        cause = _first_line(str(e))
        if self._api_key and self._api_key != DUMMY_API_KEY:
            cause = cause.replace(self._api_key, "***")
        kind = type(e).__name__ + (f" {status}" if status else "")
        refused = _connection_failure(e)
        if refused is not None:
            # litellm reports a refused connection as "InternalServerError 500": no server
            # answered at all, so say that instead of blaming one.
            kind, cause = "ConnectionError", f"cannot connect ({refused})"
        tries = f" after {attempts} attempt{'s' if attempts > 1 else ''}"
        return ModelError(f"{self.name}{where}: {kind}{tries}: {cause}")

    def _check_provider(self) -> str:
        litellm = import_litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(self.name, api_base=self.api_base)
        except Exception:  # noqa: BLE001 - litellm raises its own BadRequestError here
            raise ModelError(
                f"{self.name!r} is not a model string litellm knows: use provider/model, e.g. "
                "openai/<name> with --api-base http://host:port/v1 for vLLM or `harnessctl serve`, "
                "anthropic/<model>, or local:<path> / oracle"
            ) from None
        return provider

    def _find_api_key(self, api_key: str | None, api_key_env: str | None) -> str | None:
        if api_key:
            return api_key
        if api_key_env:
            value = os.environ.get(api_key_env)
            if not value:
                raise ModelError(f"environment variable {api_key_env} (the API key for {self.name}) is not set")
            return value
        provider_var = f"{self.provider.upper()}_API_KEY"
        if self.api_base and not os.environ.get(provider_var):
            return DUMMY_API_KEY
        if not self.api_base:
            # a hosted provider without its key fails only at the first call, as a retried
            # "500 Missing credentials": say which variable is missing now, once
            missing = missing_key_variables(self.name)
            if missing:
                raise ModelError(
                    f"{self.name}: no API key — {missing[0]} is not set; export it, or name the variable that "
                    "holds the key with --api-key-env VAR"
                )
        return None  # litellm reads the provider's own environment variable


def missing_key_variables(model: str) -> list[str]:
    """The API-key variables a hosted provider needs that the environment lacks (litellm's own
    ``validate_environment``): ``["OPENAI_API_KEY"]`` for ``gpt-4o-mini`` without its key.

    >>> missing_key_variables("gpt-4o-mini") in ([], ["OPENAI_API_KEY"])     # doctest: +SKIP
    True
    """
    litellm = import_litellm()
    try:
        report = litellm.validate_environment(model=model)
    except Exception:  # noqa: BLE001 - an unknown provider is reported elsewhere
        return []
    return [k for k in report.get("missing_keys") or [] if k.endswith("_API_KEY") and not os.environ.get(k)]


def request_timeout(seconds: float) -> Any:
    """litellm's ``timeout`` for a request of at most ``seconds``: the whole time to read the
    reply, but at most :data:`CONNECT_TIMEOUT_S` to connect.

    >>> t = request_timeout(120)
    >>> t.read, t.connect
    (120, 5.0)
    """
    import httpx

    return httpx.Timeout(seconds, connect=min(CONNECT_TIMEOUT_S, seconds))


def check_reachable(model: str, api_base: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`ModelError` when nothing accepts a connection at ``api_base``'s host and port
    (refused, no such host, no answer within ``timeout_s``). One TCP connection, no request: the
    preflight asks the endpoint what it serves once litellm is loaded.

    >>> check_reachable("openai/x", "http://127.0.0.1:9/v1")
    Traceback (most recent call last):
    ...
    harnessctl.models.base.ModelError: openai/x: cannot reach http://127.0.0.1:9/v1 (...Connection refused); is the server running ...
    """
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(api_base)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ModelError(f"--api-base {api_base!r} is not a URL; expected e.g. http://127.0.0.1:8000/v1")
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        raise ModelError(f"--api-base {api_base!r}: the port is not a number") from None
    try:
        socket.create_connection((url.hostname, port), timeout=timeout_s).close()
    except TimeoutError:
        cause = f"no connection within {timeout_s:g} s"
    except OSError as e:
        cause = _first_line(str(e)) or type(e).__name__
    else:
        return
    raise ModelError(_unreachable(model, api_base, cause))


def _unreachable(model: str, api_base: str, cause: str) -> str:
    return (
        f"{model}: cannot reach {api_base} ({cause}); is the server running "
        "(e.g. `harnessctl serve local:PATH --port PORT`) and is --api-base right?"
    )


def _refused(e: BaseException) -> bool:
    """Whether the error's cause chain holds a refused connection (no server listens there)."""
    import errno

    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == errno.ECONNREFUSED:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _connection_failure(e: BaseException) -> str | None:
    """Why no connection was made (e.g. ``[Errno 111] Connection refused``), when the error's
    cause chain says the server was never reached; else None."""
    seen: set[int] = set()
    found: str | None = None
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        name = type(cur).__name__
        if isinstance(cur, ConnectionError) or name in ("ConnectError", "APIConnectionError"):
            found = _first_line(str(cur)) or name
        cur = cur.__cause__ or cur.__context__
    return found


def _retryable(e: Exception, litellm: Any) -> bool:
    """Transport errors, timeouts, rate limits and 5xx are worth retrying; other 4xx are not, nor
    is a refused connection."""
    ex = litellm.exceptions
    if isinstance(e, ex.AuthenticationError) or "missing credentials" in str(e).lower():
        return False  # no retry brings a key
    if _refused(e):
        return False  # nothing listens at the endpoint: a retry a second later finds nobody either
    if isinstance(
        e, (ex.Timeout, ex.APIConnectionError, ex.RateLimitError, ex.InternalServerError, ex.ServiceUnavailableError)
    ):
        return True
    status = getattr(e, "status_code", None)
    if isinstance(status, int):
        return status >= 500 or status == 429
    return False


def _wire_message(m: dict[str, Any]) -> dict[str, Any]:
    """OpenAI wire form: tool-call arguments as JSON strings (servers reject objects there)."""
    calls = m.get("tool_calls")
    if not calls:
        return m
    wired = []
    for i, c in enumerate(calls):
        fn = dict(c.get("function", c))
        args = fn.get("arguments", {})
        if not isinstance(args, str):
            fn["arguments"] = json.dumps(args if args is not None else {}, ensure_ascii=False)
        wired.append(
            {
                "id": c.get("id") or f"call_{i}",
                "type": "function",
                "function": {"name": fn.get("name", ""), "arguments": fn["arguments"]},
            }
        )
    out = dict(m)
    out["tool_calls"] = wired
    return out


def _to_response(raw: Any, latency_s: float) -> ModelResponse:
    choice = raw.choices[0]
    message = choice.message
    text = getattr(message, "content", None) or ""
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning and "<think>" not in text:
        # Servers with a reasoning parser split the think block off; put it back where the
        # scorer measures reasoning length.
        text = f"<think>{reasoning}</think>{text}"
    content, calls, errors = parse_tool_calls(text)
    for tc in getattr(message, "tool_calls", None) or []:
        fn = tc.function
        raw_args = fn.arguments if isinstance(fn.arguments, str) else json.dumps(fn.arguments or {})
        try:
            args = json.loads(raw_args) if raw_args.strip() else {}
        except json.JSONDecodeError:
            args = None
        if args is not None and not isinstance(args, dict):
            args = None
        calls.append(ToolCall(name=fn.name or "", arguments=args, id=tc.id or "", raw_arguments=raw_args))
    usage = getattr(raw, "usage", None)
    finish = choice.finish_reason or "stop"
    return ModelResponse(
        content=content,
        tool_calls=calls,
        finish_reason=finish,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        latency_s=latency_s,
        parse_errors=errors,
    )


def _first_line(text: str) -> str:
    text = text.strip()
    line = text.splitlines()[0] if text else ""
    return line[:300]
