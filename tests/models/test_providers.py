"""Every litellm provider, and a server that says what it can never do: settings a provider does
not take are left out (with one note), the preflight names what is wrong with an endpoint, the
embedded server answers 400 to requests it can never serve and logs a client that hung up as
one line."""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.litellm_backend import LiteLLMModel
from harnessctl.models.local import ContextLengthError
from harnessctl.models.scripted import ScriptedModel
from harnessctl.models.server import EmbeddedServer
from harnessctl.models.types import ModelResponse

USER = [{"role": "user", "content": "how much is the one on screen?"}]


class FakeAnthropic:
    """A loopback stand-in for Anthropic's Messages API that keeps every request body."""

    def __init__(self):
        self.bodies: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                fake.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                data = json.dumps(
                    {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-3-5-haiku-20241022",
                        "content": [{"type": "text", "text": "It is $19.99 today."}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 12, "output_tokens": 7},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_anthropic():
    fake = FakeAnthropic()
    yield fake
    fake.stop()


def test_seed_is_not_sent_to_a_provider_that_refuses_it(fake_anthropic, monkeypatch, caplog):
    monkeypatch.setenv("HARNESSCTL_TEST_ANTHROPIC_KEY", "sk-ant-test-key-0001")
    model = LiteLLMModel(
        "anthropic/claude-3-5-haiku-20241022", api_base=fake_anthropic.url, api_key_env="HARNESSCTL_TEST_ANTHROPIC_KEY"
    )
    settings = GenerationSettings(temperature=0.3, max_tokens=40, seed=7, timeout_s=10)
    with caplog.at_level(logging.WARNING, logger="harnessctl.models.litellm_backend"):
        first = model.generate(USER, [], settings)
        model.generate(USER, [], settings)
    assert first.content == "It is $19.99 today." and first.completion_tokens == 7
    assert len(fake_anthropic.bodies) == 2
    body = fake_anthropic.bodies[0]
    assert "seed" not in body and body["max_tokens"] == 40 and body["temperature"] == 0.3
    notes = [r.getMessage() for r in caplog.records if "seed" in r.getMessage()]
    assert notes == ["note: anthropic/claude-3-5-haiku-20241022 does not take 'seed'; it is not sent"]  # once


def test_an_openai_compatible_server_still_gets_the_seed(served_echo):
    server, seen = served_echo
    LiteLLMModel("openai/demo", api_base=server.url).generate(
        USER, [], GenerationSettings(seed=11, max_tokens=8, timeout_s=10)
    )
    assert seen[-1].seed == 11


@pytest.fixture
def served_echo():
    seen: list = []

    class Echo:
        name = "echo"
        max_positions = 64

        def generate(self, messages, tools, settings):
            seen.append(settings)
            from harnessctl.models.types import ModelResponse

            if settings.max_tokens == 40:
                raise ContextLengthError(
                    "local:echo: prompt of 30 tokens + max_tokens 40 exceeds the model's 64 positions"
                )
            return ModelResponse(content="ok")

        def for_episode(self, case, harness):
            return self

    server = EmbeddedServer(Echo(), model_name="demo", api_key=None).start()
    yield server, seen
    server.stop()


def test_requests_the_model_can_never_serve_get_a_400_that_is_not_retried(served_echo):
    server, seen = served_echo
    client = LiteLLMModel("openai/demo", api_base=server.url, max_retries=3, backoff_s=0.01)
    for max_tokens, says in ((64, "leaves no room for a prompt"), (40, "exceeds the model's 64 positions")):
        before = len(seen)
        with pytest.raises(ModelError, match="BadRequestError 400 after 1 attempt") as e:
            client.generate(USER, [], GenerationSettings(max_tokens=max_tokens, timeout_s=10))
        assert says in str(e.value)
        assert len(seen) - before == (0 if max_tokens == 64 else 1)  # refused before generating, or once
    assert server.responses.get(400) == 2 and 500 not in server.responses


def test_preflight_names_what_is_wrong_with_an_endpoint(served_echo, monkeypatch):
    server, _ = served_echo
    LiteLLMModel("openai/demo", api_base=server.url).preflight()  # served: fine
    with pytest.raises(ModelError, match="serves 'demo', not 'mia'; pass --model openai/demo"):
        LiteLLMModel("openai/mia", api_base=server.url).preflight()
    with pytest.raises(ModelError, match="is not a URL"):
        LiteLLMModel("openai/demo", api_base="notaurl").preflight()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(ModelError, match="cannot reach .* is the server running"):
        LiteLLMModel("openai/demo", api_base=f"http://127.0.0.1:{free}/v1").preflight()
    locked = EmbeddedServer(ScriptedModel(["hi"]), model_name="demo", api_key="sk-right-key-1234").start()
    try:
        with pytest.raises(ModelError, match="refused the API key .*--api-key-env"):
            monkeypatch.setenv("HARNESSCTL_TEST_WRONG_KEY", "sk-wrong-key-9999")
            LiteLLMModel("openai/demo", api_base=locked.url, api_key_env="HARNESSCTL_TEST_WRONG_KEY").preflight()
    finally:
        locked.stop()


def test_a_client_that_hangs_up_is_one_log_line_not_a_traceback(caplog):
    def slow(messages, tools):
        time.sleep(0.3)
        return "late answer"

    server = EmbeddedServer(ScriptedModel([slow], repeat_last=True), model_name="demo").start()
    host, port = server.url.split("//")[1].split("/")[0].split(":")
    body = json.dumps({"model": "demo", "messages": USER}).encode()
    try:
        with caplog.at_level(logging.DEBUG, logger="harnessctl.models.server"):
            s = socket.create_connection((host, int(port)))
            s.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # hang up with a reset
            s.close()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not any("disconnected" in r.getMessage() for r in caplog.records):
                time.sleep(0.05)
    finally:
        server.stop()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len([m for m in messages if "disconnected before its answer was sent" in m]) == 1
    assert not any("backend failed" in m for m in messages) and not any(r.exc_info for r in caplog.records)


class _Typist:
    """A backend that streams: a word every 0.1 s through ``on_text``, as the local checkpoint does."""

    name = "typist"

    def generate(self, messages, tools, settings, *, on_text=None):
        text = ""
        for word in ("one", " two", " three", " four"):
            text += word
            if on_text:
                on_text(text)
            time.sleep(0.1)
        return ModelResponse(content=text, completion_tokens=4)

    def for_episode(self, case, harness):
        return self


def test_a_client_that_hangs_up_mid_stream_is_one_log_line_and_the_server_serves_on(caplog):
    server = EmbeddedServer(_Typist(), model_name="demo").start()
    host, port = server.url.split("//")[1].split("/")[0].split(":")
    body = json.dumps({"model": "demo", "messages": USER, "stream": True}).encode()
    try:
        with caplog.at_level(logging.DEBUG, logger="harnessctl.models.server"):
            s = socket.create_connection((host, int(port)))
            s.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            assert b"text/event-stream" in s.recv(4096)  # the stream has begun
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # hang up with a reset
            s.close()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not any("disconnected" in r.getMessage() for r in caplog.records):
                time.sleep(0.05)
        after = LiteLLMModel("openai/demo", api_base=server.url).generate(
            USER, [], GenerationSettings(max_tokens=8, timeout_s=10)
        )
    finally:
        server.stop()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len([m for m in messages if "disconnected during its stream" in m]) == 1
    assert not any("backend failed" in m for m in messages) and not any(r.exc_info for r in caplog.records)
    assert after.content == "one two three four"


def test_a_hosted_model_without_its_key_is_refused_at_once_naming_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    started = time.perf_counter()
    with pytest.raises(ModelError, match=r"gpt-4o-mini: no API key — OPENAI_API_KEY is not set.*--api-key-env VAR"):
        LiteLLMModel("gpt-4o-mini")
    with pytest.raises(ModelError, match=r"ANTHROPIC_API_KEY is not set"):
        LiteLLMModel("anthropic/claude-sonnet-4-5")
    assert time.perf_counter() - started < 5  # no call was made, nothing retried


def test_a_local_server_needs_no_key_and_a_set_key_is_enough(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LiteLLMModel("openai/tiny", api_base="http://127.0.0.1:9/v1").name == "openai/tiny"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert LiteLLMModel("gpt-4o-mini").name == "gpt-4o-mini"


def test_an_authentication_error_is_not_retried():
    import litellm

    from harnessctl.models.litellm_backend import _retryable

    auth = litellm.exceptions.AuthenticationError("bad key", llm_provider="openai", model="gpt-4o-mini")
    assert not _retryable(auth, litellm)
    missing = litellm.exceptions.InternalServerError(
        "OpenAIException - Missing credentials", llm_provider="openai", model="gpt-4o-mini"
    )
    assert not _retryable(missing, litellm)
    assert _retryable(litellm.exceptions.InternalServerError("boom", llm_provider="openai", model="m"), litellm)
