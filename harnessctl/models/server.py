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
that hangs up before its answer is sent is one log line.

``stream: true`` answers with server-sent events as OpenAI does: ``chat.completion.chunk``
objects (the role, then the content as the model writes it — a backend whose ``generate`` takes
``on_text``, the in-process checkpoint, streams token by token; others send their reply in one
piece), the tool calls and the finish reason in the last chunks, the usage in a chunk of its own
when ``stream_options.include_usage`` is set, then ``data: [DONE]``.

With vLLM installed and a CUDA GPU present, :func:`serve_model` execs ``vllm serve`` with
``--enable-auto-tool-choice --tool-call-parser hermes``: the hermes parser reads exactly the
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks that Qwen-family models and
the tiny model's chat template produce.
"""

from __future__ import annotations

import importlib.util
import inspect
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

from harnessctl.errors import HarnessctlError
from harnessctl.models.base import GenerationSettings, ModelBackend, ModelError
from harnessctl.models.local import ContextLengthError
from harnessctl.models.registry import resolve_model
from harnessctl.models.toolcall_text import parse_tool_calls
from harnessctl.models.types import ModelResponse

log = logging.getLogger(__name__)

ROLES = ("system", "user", "assistant", "tool")
MAX_BODY_BYTES = 16 * 1024 * 1024
#: The tool-call parser vLLM needs for Qwen/Hermes-style ``<tool_call>`` text.
VLLM_TOOL_CALL_PARSER = "hermes"


class RequestError(HarnessctlError):
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
    return openai_response(generate_reply(backend, body, model_name), model_name)


def generate_reply(
    backend: ModelBackend, body: Any, model_name: str, on_text: Callable[[str], None] | None = None
) -> ModelResponse:
    """Validate a ``/v1/chat/completions`` body and generate the reply; ``on_text`` gets the text
    so far as it is generated, when the backend can stream (its ``generate`` takes ``on_text``).

    >>> generate_reply(ScriptedModel(["hi"]), {"messages": [{"role": "user", "content": "yo"}]}, "m").content   # doctest: +SKIP
    'hi'
    """
    messages, tools, settings = parse_request(body, model_name)
    positions = getattr(backend, "max_positions", 0) or 0
    if positions and settings.max_tokens >= positions:
        raise RequestError(
            400,
            f"'max_tokens' {settings.max_tokens} leaves no room for a prompt: this model has {positions} positions",
            param="max_tokens",
            code="context_length_exceeded",
        )
    extra = {"on_text": on_text} if on_text is not None and _streams(backend) else {}
    try:
        return backend.generate(messages, tools, settings, **extra)
    except ContextLengthError as e:
        raise RequestError(
            400,
            f"{e}; send a shorter prompt or a smaller max_tokens",
            param="max_tokens",
            code="context_length_exceeded",
        ) from None
    except ModelError as e:
        raise RequestError(500, f"the model failed: {e}", code="model_error") from None


def _streams(backend: Any) -> bool:
    try:
        return "on_text" in inspect.signature(backend.generate).parameters
    except (TypeError, ValueError):
        return False


def stream_options(body: Any) -> tuple[bool, bool]:
    """``(stream, include_usage)`` of a request body; a 400 when they are not booleans.

    >>> stream_options({"stream": True, "stream_options": {"include_usage": True}})
    (True, True)
    """
    if not isinstance(body, dict):
        return False, False
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise RequestError(400, f"'stream' must be true or false (got {stream!r})", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise RequestError(
            400, "'stream_options' must be an object, e.g. {\"include_usage\": true}", param="stream_options"
        )
    include_usage = options.get("include_usage") or False
    if not isinstance(include_usage, bool):
        raise RequestError(
            400, f"'stream_options.include_usage' must be true or false (got {include_usage!r})", param="stream_options"
        )
    return stream, include_usage


class CompletionStream:
    """The ``chat.completion.chunk`` objects of one streamed answer.

    :meth:`text` takes the model's text so far and returns chunks for the content that became
    visible: the text before any ``<`` (a tool-call or think block may be starting), tidied as
    the final reply will be, so what was sent is always a prefix of the final content.
    :meth:`finish` returns the rest: remaining content, the tool calls, the finish reason and,
    with ``include_usage``, the usage.

    >>> s = CompletionStream("tiny")
    >>> [c["choices"][0]["delta"] for c in s.text("Hello the")]
    [{'role': 'assistant', 'content': ''}, {'content': 'Hello the'}]
    >>> [c["choices"][0]["delta"] for c in s.text("Hello there <tool_")]
    [{'content': 're'}]
    """

    def __init__(self, model_name: str, *, include_usage: bool = False):
        self.model_name, self.include_usage = model_name, include_usage
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.sent = ""
        self._started = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model_name,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    def _content(self, content: str) -> list[dict[str, Any]]:
        out = [] if self._started else [self._chunk({"role": "assistant", "content": ""})]
        self._started = True
        if content.startswith(self.sent) and len(content) > len(self.sent):
            out.append(self._chunk({"content": content[len(self.sent) :]}))
            self.sent = content
        return out

    def text(self, so_far: str) -> list[dict[str, Any]]:
        """Chunks for the content of ``so_far`` (the completion's text until now) not sent yet."""
        visible = so_far.split("<", 1)[0].rstrip("\ufffd")  # an incomplete character is held back
        return self._content(parse_tool_calls(visible)[0])

    def finish(self, response: ModelResponse) -> list[dict[str, Any]]:
        """The last chunks: remaining content, tool calls, finish reason, usage."""
        final = openai_response(response, self.model_name)
        message, choice = final["choices"][0]["message"], final["choices"][0]
        content = message.get("content") or ""
        if not content.startswith(self.sent):  # cannot happen with text(): sent is a prefix by construction
            log.warning("streamed content diverged from the final reply; the rest of the content is not sent")
        out = self._content(content)
        if message.get("tool_calls"):
            out.append(self._chunk({"tool_calls": [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]}))
        out.append(self._chunk({}, choice["finish_reason"]))
        if self.include_usage:
            out.append(
                {
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model_name,
                    "choices": [],
                    "usage": final["usage"],
                }
            )
        return out


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
    stream_options(body)
    if body.get("n", 1) != 1:
        raise RequestError(400, "only n=1 is supported", param="n")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list of {role, content} objects", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise RequestError(400, f"messages[{i}] must be an object", param=f"messages[{i}]")
        if m.get("role") not in ROLES:
            raise RequestError(
                400,
                f"messages[{i}].role must be one of {', '.join(ROLES)} (got {m.get('role')!r})",
                param=f"messages[{i}].role",
            )
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
            raise RequestError(
                400,
                f"tools[{i}] must look like {{type: function, function: {{name, description, parameters}}}}",
                param=f"tools[{i}]",
            )
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

    def start(self) -> EmbeddedServer:
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
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": server.model_name, "object": "model", "created": 0, "owned_by": "harnessctl"}],
                    },
                )
            else:
                self._send(404, RequestError(404, f"no route GET {path}; try /v1/models", code="not_found").body())

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?")[0].rstrip("/")
            if path not in ("/v1/chat/completions", "/chat/completions"):
                self._drain()
                self._send(
                    404, RequestError(404, f"no route POST {path}; use /v1/chat/completions", code="not_found").body()
                )
                return
            if not self._check_auth():
                self._drain()
                return
            try:
                body = self._read_json()
                stream, include_usage = stream_options(body)
                if stream:
                    self._stream(body, include_usage)
                    return
                answer = chat_completion(server.backend, body, server.model_name)
            except RequestError as e:
                answer, status = e.body(), e.status
            except Exception as e:  # noqa: BLE001 - a broken backend must not kill the server
                log.exception("backend failed")
                answer, status = (
                    RequestError(500, f"internal error: {type(e).__name__}: {e}", code="internal_error").body(),
                    500,
                )
            else:
                status = 200
            try:
                self._send(status, answer)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                # A client that gave up (its timeout, a cancelled run) is not the server's error.
                log.info("client %s disconnected before its answer was sent", self.address_string())
                self.close_connection = True

        def _stream(self, body: Any, include_usage: bool) -> None:
            """Server-sent events over chunked transfer encoding (the connection stays open).
            The headers go out with the first chunk, so a request refused before the model
            writes anything still gets its plain 4xx/5xx JSON answer."""
            stream = CompletionStream(server.model_name, include_usage=include_usage)
            started = False

            def send(chunks: list[dict[str, Any]]) -> None:
                nonlocal started
                if not chunks:
                    return
                if not started:
                    server.count(200)
                    self.send_response(200, "OK")
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    started = True
                data = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks).encode("utf-8")
                self._chunk(data)

            try:
                response = generate_reply(
                    server.backend, body, server.model_name, on_text=lambda t: send(stream.text(t))
                )
                send(stream.finish(response))
            except RequestError as e:
                if not started:
                    raise
                send([e.body()])  # mid-stream: OpenAI-style error event, then the end
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                log.info("client %s disconnected during its stream", self.address_string())
                self.close_connection = True
                return
            except Exception as e:  # a broken backend must not kill the server
                if not started:
                    raise
                log.exception("backend failed mid-stream")
                send([RequestError(500, f"internal error: {type(e).__name__}: {e}", code="internal_error").body()])
            try:
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                self.close_connection = True

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):X}\r\n".encode("ascii") + data + b"\r\n")
            self.wfile.flush()

        def _check_auth(self) -> bool:
            if server.authorized(self.headers.get("Authorization")):
                return True
            self._send(
                401,
                RequestError(
                    401, "missing or wrong API key (Authorization: Bearer <key>)", code="invalid_api_key"
                ).body(),
            )
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
    """The name clients ask for: a folder's last part, a shipped model's own name (``hat``)."""
    name = getattr(backend, "name", "model")
    if name.startswith("shipped:"):
        return name.partition(":")[2] or "model"
    if name.startswith(("local:", "llamacpp:")):
        return Path(name.partition(":")[2]).name or "model"
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
        "vllm",
        "serve",
        path,
        "--host",
        host,
        "--port",
        str(port),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        VLLM_TOOL_CALL_PARSER,
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


class ServeError(HarnessctlError):
    """A model that cannot be served here: it does not load, or the address cannot be listened on."""


def serve_model(
    spec: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_name: str | None = None,
    api_key: str | None = None,
    embedded: bool = False,
    on_exec: Callable[[list[str]], None] | None = None,
    on_listening: Callable[[EmbeddedServer], None] | None = None,
    on_stopped: Callable[[], None] | None = None,
) -> None:
    """Serve the model ``spec`` on ``host:port`` until Ctrl-C: with vLLM where it can run (and not
    ``embedded``; a ``llamacpp:`` model runs in process) this process becomes ``vllm serve`` (told
    to ``on_exec`` first); else the model is loaded into an :class:`EmbeddedServer`, shown to
    ``on_listening``, served, and stopped on Ctrl-C (``on_stopped`` is told first). Raises
    :class:`ServeError`.

    >>> serve_model("local:.harnessctl/models/tiny", port=0, embedded=True, on_listening=lambda s: print(s.url))   # doctest: +SKIP
    http://127.0.0.1:40123/v1
    """
    if not embedded and not spec.startswith("llamacpp:") and vllm_available():
        if on_exec:
            on_exec(vllm_command(spec, host=host, port=port, served_name=served_name))
        exec_vllm(spec, host=host, port=port, served_name=served_name, api_key=api_key)
        return

    try:
        backend = resolve_model(spec)
    except ModelError as e:
        raise ServeError(f"model: {e}") from None
    try:
        server = EmbeddedServer(backend, host=host, port=port, model_name=served_name, api_key=api_key)
    except OSError as e:
        raise ServeError(f"cannot listen on {host}:{port} ({e.strerror or e}); pick another --port") from None
    if on_listening:
        on_listening(server)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        if on_stopped:
            on_stopped()
    finally:
        server.stop()
