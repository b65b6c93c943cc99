"""Serve a model over the OpenAI chat-completions API: vLLM when it can run, else an embedded server.

The runtime reaches served models only through litellm, so a test that talks to the embedded
server on loopback exercises the very path production uses against vLLM.

>>> url, stop = serve_in_background(ScriptedModel(["hello"]), model_name="demo")   # doctest: +SKIP
>>> LiteLLMModel("openai/demo", api_base=url).generate(                          # doctest: +SKIP
...     [{"role": "user", "content": "hi"}], [], GenerationSettings()).content
'hello'
>>> stop()                                                                        # doctest: +SKIP

The embedded server is stdlib only (``http.server.ThreadingHTTPServer``): ``GET /v1/models``,
``POST /v1/chat/completions`` (``messages``, ``tools``, ``temperature``, ``top_p``,
``max_tokens``, ``seed``), ``GET /health``. Tool calls come back in OpenAI form (ids,
``function.name``, ``function.arguments`` as a JSON string) with ``usage``. Bad requests get a
4xx JSON error that says what to fix — a request the model can never serve (``max_tokens``
beyond its context) is a 400, which clients do not retry; a backend failure is a 500. A client
that hangs up before its answer is sent is one log line. Streaming is not offered.

With vLLM installed and a CUDA GPU present, :func:`serve` execs ``vllm serve`` with
``--enable-auto-tool-choice --tool-call-parser hermes``: the hermes parser reads exactly the
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks that Qwen-family models and
the tiny model's chat template produce.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harnessctl.models.base import GenerationSettings, ModelBackend, ModelError
from harnessctl.models.types import ModelResponse

log = logging.getLogger(__name__)

ROLES = ("system", "user", "assistant", "tool")
MAX_BODY_BYTES = 16 * 1024 * 1024
#: The tool-call parser vLLM needs for Qwen/Hermes-style ``<tool_call>`` text.
VLLM_TOOL_CALL_PARSER = "hermes"


class RequestError(Exception):
    """A request the server refuses: HTTP ``status`` and a message that says what to fix."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.code, "param": self.param, "code": self.status}}


# -- the request -> response mapping (pure, testable without sockets) --------------------------


def chat_completion(backend: ModelBackend, body: Any, model_name: str) -> dict[str, Any]:
    """Answer one ``/v1/chat/completions`` request body with ``backend``.

    Raises :class:`RequestError` (4xx) for a bad request and 500 when the backend fails.

    >>> chat_completion(ScriptedModel(["hi"]), {"model": "m", "messages": [{"role": "user", "content": "yo"}]}, "m")["choices"][0]["message"]["content"]   # doctest: +SKIP
    'hi'
    """
    from harnessctl.models.local import ContextLengthError

    messages, tools, settings = parse_request(body, model_name)
    positions = getattr(backend, "max_positions", 0) or 0
    if positions and settings.max_tokens >= positions:
        raise RequestError(
            400, f"'max_tokens' {settings.max_tokens} leaves no room for a prompt: this model has {positions} positions",
            param="max_tokens", code="context_length_exceeded",
        )
    try:
        response = backend.generate(messages, tools, settings)
    except ContextLengthError as e:
        raise RequestError(400, f"{e}; send a shorter prompt or a smaller max_tokens", param="max_tokens", code="context_length_exceeded") from None
    except ModelError as e:
        raise RequestError(500, f"the model failed: {e}", code="model_error") from None
    return openai_response(response, model_name)


def parse_request(body: Any, model_name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], GenerationSettings]:
    """Validate a chat-completions body; return ``(messages, tools, settings)``."""
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    requested = body.get("model")
    if requested is not None and requested != model_name:
        raise RequestError(
            404,
            f"model {requested!r} is not served here; this server serves {model_name!r} "
            f"(litellm: --model openai/{model_name})",
            param="model",
            code="model_not_found",
        )
    if body.get("stream"):
        raise RequestError(400, "streaming is not supported by the embedded server; send stream=false", param="stream")
    if body.get("n", 1) != 1:
        raise RequestError(400, "only n=1 is supported", param="n")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list of {role, content} objects", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise RequestError(400, f"messages[{i}] must be an object", param=f"messages[{i}]")
        if m.get("role") not in ROLES:
            raise RequestError(400, f"messages[{i}].role must be one of {', '.join(ROLES)} (got {m.get('role')!r})", param=f"messages[{i}].role")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise RequestError(400, f"messages[{i}].content must be a string", param=f"messages[{i}].content")
        if isinstance(content, list):  # OpenAI content parts: keep the text ones
            m = dict(m)
            m["content"] = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            messages[i] = m
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise RequestError(400, "'tools' must be a list of {type: function, function: {name, ...}}", param="tools")
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise RequestError(400, f"tools[{i}] must look like {{type: function, function: {{name, description, parameters}}}}", param=f"tools[{i}]")
    temperature = _number(body, "temperature", 0.0, low=0.0, high=2.0)
    top_p = _number(body, "top_p", 1.0, low=0.0, high=1.0)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 256))
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise RequestError(400, f"'max_tokens' must be a positive integer (got {max_tokens!r})", param="max_tokens")
    seed = body.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise RequestError(400, f"'seed' must be an integer (got {seed!r})", param="seed")
    settings = GenerationSettings(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
    return messages, tools, settings


def openai_response(response: ModelResponse, model_name: str) -> dict[str, Any]:
    """A :class:`ModelResponse` as an OpenAI ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content or None}
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {
                    "name": call.name,
                    # Unparsable arguments go back as the model wrote them: the client decides.
                    "arguments": json.dumps(call.arguments, ensure_ascii=False)
                    if call.arguments is not None
                    else (call.raw_arguments or ""),
                },
            }
            for call in response.tool_calls
        ]
    finish = response.finish_reason
    if response.tool_calls and finish == "stop":
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "total_tokens": response.prompt_tokens + response.completion_tokens,
        },
    }


def _number(body: dict[str, Any], key: str, default: float, *, low: float, high: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not (low <= value <= high):
        raise RequestError(400, f"'{key}' must be a number in [{low:g}, {high:g}] (got {value!r})", param=key)
    return float(value)


# -- the HTTP server ------------------------------------------------------------------------


class _QuietHTTPServer(ThreadingHTTPServer):
    """A client that hangs up mid-response (a timeout, a cancelled eval) is normal for a
    server under load: log it at debug level instead of printing a traceback to stderr."""

    # socketserver's default backlog is 5: an eval opening 16 connections at once would see
    # some reset or delayed by a SYN retry (~1 s). Servers under load keep a deeper queue.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            log.debug("client %s disconnected: %s", client_address, exc)
            return
        log.exception("error while serving %s", client_address)


class EmbeddedServer:
    """An OpenAI-compatible HTTP server for one backend, on ``host:port`` (port 0: any free one).

    ``api_key``, when set, is required as ``Authorization: Bearer <key>``.
    """

    def __init__(
        self,
        backend: ModelBackend,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str | None = None,
        api_key: str | None = None,
    ):
        self.backend = backend
        self.model_name = model_name or _default_served_name(backend)
        self._api_key = api_key
        self._httpd = _QuietHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._stats_lock = threading.Lock()
        #: Responses sent so far, by HTTP status (e.g. ``{200: 3, 500: 2}``).
        self.responses: dict[int, int] = {}

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients, e.g. ``http://127.0.0.1:8000/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> "EmbeddedServer":
        self._thread = threading.Thread(target=self.serve_forever, name="harnessctl-serve", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def authorized(self, header: str | None) -> bool:
        return self._api_key is None or header == f"Bearer {self._api_key}"

    def count(self, status: int) -> None:
        with self._stats_lock:
            self.responses[status] = self.responses.get(status, 0) + 1


def serve_in_background(
    backend: ModelBackend,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    model_name: str | None = None,
    api_key: str | None = None,
) -> tuple[str, Callable[[], None]]:
    """Start an :class:`EmbeddedServer` in a thread; return ``(base_url, stop)``.

    >>> url, stop = serve_in_background(backend, model_name="tiny")   # doctest: +SKIP
    >>> url                                                           # doctest: +SKIP
    'http://127.0.0.1:41234/v1'
    """
    server = EmbeddedServer(backend, host=host, port=port, model_name=model_name, api_key=api_key).start()
    return server.url, server.stop


def _make_handler(server: EmbeddedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: clients reuse the connection
        # Headers and body go out in separate writes; with Nagle on, a keep-alive client's
        # delayed ACK stalls every response by ~40 ms.
        disable_nagle_algorithm = True
        server_version = "harnessctl"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            log.debug("%s " + format, self.address_string(), *args)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            path = self.path.split("?")[0].rstrip("/")
            if path in ("/health", "/v1/health"):
                self._send(200, {"status": "ok"})
            elif path == "/v1/models":
                if not self._check_auth():
                    return
                self._send(200, {"object": "list", "data": [{"id": server.model_name, "object": "model", "created": 0, "owned_by": "harnessctl"}]})
            else:
                self._send(404, RequestError(404, f"no route GET {path}; try /v1/models", code="not_found").body())

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?")[0].rstrip("/")
            if path not in ("/v1/chat/completions", "/chat/completions"):
                self._drain()
                self._send(404, RequestError(404, f"no route POST {path}; use /v1/chat/completions", code="not_found").body())
                return
            if not self._check_auth():
                self._drain()
                return
            try:
                body = self._read_json()
                answer = chat_completion(server.backend, body, server.model_name)
            except RequestError as e:
                answer, status = e.body(), e.status
            except Exception as e:  # noqa: BLE001 - a broken backend must not kill the server
                log.exception("backend failed")
                answer, status = RequestError(500, f"internal error: {type(e).__name__}: {e}", code="internal_error").body(), 500
            else:
                status = 200
            try:
                self._send(status, answer)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                # A client that gave up (its timeout, a cancelled run) is not the server's error.
                log.info("client %s disconnected before its answer was sent", self.address_string())
                self.close_connection = True

        def _check_auth(self) -> bool:
            if server.authorized(self.headers.get("Authorization")):
                return True
            self._send(401, RequestError(401, "missing or wrong API key (Authorization: Bearer <key>)", code="invalid_api_key").body())
            return False

        def _read_json(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._drain()
                raise RequestError(413, f"request body over {MAX_BODY_BYTES} bytes")
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise RequestError(400, f"the request body is not valid JSON ({e})") from None

        def _drain(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if 0 < length <= MAX_BODY_BYTES:
                self.rfile.read(length)
            elif length:
                self.close_connection = True

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            server.count(status)
            self.send_response(status, HTTPStatus(status).phrase)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _default_served_name(backend: ModelBackend) -> str:
    name = getattr(backend, "name", "model")
    if name.startswith("local:"):
        return Path(name[len("local:") :]).name or "model"
    return name.replace("/", "-")


# -- choosing vLLM or the embedded server ---------------------------------------------------


def vllm_available() -> bool:
    """vLLM can serve here: the package and its CLI are installed and a CUDA GPU is visible."""
    if importlib.util.find_spec("vllm") is None or shutil.which("vllm") is None:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def vllm_command(model: str, *, host: str, port: int, served_name: str | None = None) -> list[str]:
    """The ``vllm serve`` command line for ``model`` (a path or a model id), tool calls on.

    >>> vllm_command("local:.harnessctl/models/tiny", host="127.0.0.1", port=8000)[:3]
    ['vllm', 'serve', '.harnessctl/models/tiny']
    """
    path = model[len("local:") :] if model.startswith("local:") else model
    cmd = [
        "vllm", "serve", path,
        "--host", host, "--port", str(port),
        "--enable-auto-tool-choice", "--tool-call-parser", VLLM_TOOL_CALL_PARSER,
    ]
    if served_name:
        cmd += ["--served-model-name", served_name]
    return cmd


def exec_vllm(model: str, *, host: str, port: int, served_name: str | None, api_key: str | None) -> None:
    """Replace this process with ``vllm serve`` (never returns). The key travels in
    ``VLLM_API_KEY``, not on the command line where ``ps`` would show it."""
    env = dict(os.environ)
    if api_key:
        env["VLLM_API_KEY"] = api_key
    cmd = vllm_command(model, host=host, port=port, served_name=served_name)
    os.execvpe(cmd[0], cmd, env)
