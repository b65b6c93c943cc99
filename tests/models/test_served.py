"""The served path: litellm talking to the embedded OpenAI-compatible server on loopback.

Everything here goes over real HTTP, through litellm, exactly as production reaches vLLM.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from harnessctl.models.base import GenerationSettings, ModelError, agenerate
from harnessctl.models.litellm_backend import LiteLLMModel
from harnessctl.models.scripted import ScriptedModel
from harnessctl.models.server import (
    CompletionStream,
    EmbeddedServer,
    serve_in_background,
)
from harnessctl.models.types import ModelResponse, ToolCall

USER = [{"role": "user", "content": "how much is the one on screen?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_product_details",
            "description": "show the product card",
            "parameters": {
                "type": "object",
                "properties": {"product_id": {"type": "string"}},
                "required": ["product_id"],
            },
        },
    }
]
FAST = GenerationSettings(max_tokens=16, timeout_s=10)


@pytest.fixture
def served():
    """Start an embedded server for a backend; every server is stopped at the end of the test."""
    servers: list[EmbeddedServer] = []

    def start(backend, **kwargs) -> EmbeddedServer:
        server = EmbeddedServer(backend, model_name=kwargs.pop("model_name", "demo"), **kwargs).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()


def client(server: EmbeddedServer, **kwargs) -> LiteLLMModel:
    kwargs.setdefault("backoff_s", 0.01)
    return LiteLLMModel(f"openai/{server.model_name}", api_base=server.url, **kwargs)


def post(url: str, body, headers: dict | None = None) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


# -- the mapping of tool calls -------------------------------------------------------------


def test_tool_calls_come_back_as_tool_calls(served):
    server = served(
        ScriptedModel(['<tool_call>{"name": "get_product_details", "arguments": {"product_id": "P012"}}</tool_call>'])
    )
    r = client(server).generate(USER, TOOLS, FAST)
    assert r.content == ""
    assert len(r.tool_calls) == 1
    call = r.tool_calls[0]
    assert (call.name, call.arguments) == ("get_product_details", {"product_id": "P012"})
    assert call.id.startswith("call_")
    assert r.finish_reason == "tool_calls"
    assert r.latency_s > 0


def test_plain_reply_and_usage(served):
    reply = ModelResponse(content="It is $19.90 live!", prompt_tokens=42, completion_tokens=7)
    r = client(served(ScriptedModel([reply]))).generate(USER, TOOLS, FAST)
    assert r.content == "It is $19.90 live!"
    assert r.tool_calls == []
    assert (r.prompt_tokens, r.completion_tokens) == (42, 7)


def test_unparsable_arguments_are_kept_raw(served):
    bad = ModelResponse(
        tool_calls=[ToolCall(name="get_product_details", arguments=None, raw_arguments="{product_id: P012")]
    )
    r = client(served(ScriptedModel([bad]))).generate(USER, TOOLS, FAST)
    assert r.tool_calls[0].name == "get_product_details"
    assert r.tool_calls[0].arguments is None
    assert r.tool_calls[0].raw_arguments == "{product_id: P012"


def test_tool_call_text_in_the_content_is_parsed_too(served):
    # A server without a tool-call parser returns the model's text as is.
    text = ModelResponse(
        content='Checking!<tool_call>{"name": "get_product_details", "arguments": {"product_id": "P3"}}</tool_call>'
    )
    r = client(served(ScriptedModel([text]))).generate(USER, TOOLS, FAST)
    assert r.content == "Checking!"
    assert [(c.name, c.arguments) for c in r.tool_calls] == [("get_product_details", {"product_id": "P3"})]


def test_the_server_sees_messages_tools_and_settings(served):
    seen = {}

    def record(messages, tools):
        seen.update(messages=messages, tools=tools)
        return "ok"

    history = USER + [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_product_details", "arguments": {"product_id": "P1"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"price": "19.90"}'},
    ]
    client(served(ScriptedModel([record]))).generate(history, TOOLS, FAST)
    assert [m["role"] for m in seen["messages"]] == ["user", "assistant", "tool"]
    # Arguments travel as JSON text, as the OpenAI API requires.
    assert json.loads(seen["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {"product_id": "P1"}
    assert seen["tools"][0]["function"]["name"] == "get_product_details"


# -- failures: retries, timeouts, errors ----------------------------------------------------


class FlakyModel:
    """Fails ``failures`` times (the server answers 500), then replies."""

    name = "flaky"

    def __init__(self, failures: int):
        self.failures = failures
        self.calls = 0
        self._lock = threading.Lock()

    def for_episode(self, case, harness):
        return self

    def generate(self, messages, tools, settings):
        with self._lock:
            self.calls += 1
            if self.calls <= self.failures:
                raise ModelError("GPU fell over")
        return ModelResponse(content="back again")


def test_server_errors_are_retried_until_success(served):
    flaky = FlakyModel(failures=2)
    server = served(flaky)
    r = client(server, max_retries=2).generate(USER, [], FAST)
    assert r.content == "back again"
    assert flaky.calls == 3
    assert server.responses == {500: 2, 200: 1}


def test_exhausted_retries_raise_a_clear_model_error(served):
    server = served(FlakyModel(failures=5))
    with pytest.raises(ModelError) as e:
        client(server, max_retries=1).generate(USER, [], FAST)
    message = str(e.value)
    assert "openai/demo" in message and server.url in message
    assert "500" in message and "after 2 attempts" in message
    assert server.responses == {500: 2}


def test_client_errors_are_not_retried(served):
    server = served(ScriptedModel(["never"]), model_name="demo")
    wrong = LiteLLMModel("openai/other", api_base=server.url, max_retries=3, backoff_s=0.01)
    with pytest.raises(ModelError) as e:
        wrong.generate(USER, [], FAST)
    assert "not served here" in str(e.value)
    assert server.responses == {404: 1}


def test_timeouts_are_retried_then_reported(served):
    release = threading.Event()

    class Slow:
        name = "slow"

        def for_episode(self, case, harness):
            return self

        def generate(self, messages, tools, settings):
            release.wait(5)
            return ModelResponse(content="late")

    server = served(Slow())
    try:
        with pytest.raises(ModelError) as e:
            client(server, timeout_s=0.2, max_retries=1).generate(USER, [], FAST)
        assert "Timeout" in str(e.value) and "after 2 attempts" in str(e.value)
    finally:
        release.set()


def test_unreachable_server_is_a_model_error_at_the_first_attempt():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = LiteLLMModel("openai/x", api_base=f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=5)
    started = time.perf_counter()
    with pytest.raises(ModelError) as e:
        m.generate(USER, [], FAST)
    # a refused connection is not retried: nothing listens there, a retry finds nobody either
    assert "Connection" in str(e.value) and "after 1 attempt:" in str(e.value)
    assert time.perf_counter() - started < 2.5  # no backoff was slept
    # No server answered, so the message blames none: litellm's own "500" is not repeated.
    # (the port itself may contain "500": look for the status as litellm writes it)
    assert "cannot connect" in str(e.value) and "InternalServerError" not in str(e.value)
    assert "Error 500" not in str(e.value)


def test_a_connection_gets_seconds_to_open_while_the_reply_gets_the_whole_timeout(monkeypatch):
    """An endpoint that takes the connection but never accepts it (its queue is full) is given up
    within the connect limit, not the minute a slow generation is allowed."""
    import socket

    from harnessctl.models import litellm_backend

    monkeypatch.setattr(litellm_backend, "CONNECT_TIMEOUT_S", 0.5)
    limit = litellm_backend.request_timeout(60)
    assert (limit.connect, limit.read) == (0.5, 60)
    with socket.socket() as jammed:
        jammed.bind(("127.0.0.1", 0))
        jammed.listen(0)  # one connection waits in the queue; the next is never taken
        port = jammed.getsockname()[1]
        waiting = socket.create_connection(("127.0.0.1", port), timeout=1)
        try:
            m = LiteLLMModel("openai/x", api_base=f"http://127.0.0.1:{port}/v1", max_retries=0)
            started = time.perf_counter()
            with pytest.raises(ModelError, match="Timeout"):
                m.generate(USER, [], GenerationSettings(max_tokens=4, timeout_s=60))
            assert time.perf_counter() - started < 10
        finally:
            waiting.close()


def test_a_dead_endpoint_is_told_before_litellm_loads():
    import socket

    from harnessctl.models.litellm_backend import check_reachable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ModelError, match=r"openai/x: cannot reach http://127.0.0.1:\d+/v1 \(.*refused.*is the server"):
        check_reachable("openai/x", f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelError, match="is not a URL"):
        check_reachable("openai/x", "127.0.0.1:8000/v1")
    server = EmbeddedServer(ScriptedModel(["hi"]), model_name="demo").start()
    try:
        check_reachable("openai/demo", server.url)  # something listens: nothing to say
    finally:
        server.stop()


# -- keys ----------------------------------------------------------------------------------


def test_api_key_comes_from_the_environment_and_never_shows(served, monkeypatch):
    monkeypatch.setenv("DEMO_KEY", "sk-secret-123")
    server = served(ScriptedModel(["hi"], repeat_last=True), api_key="sk-secret-123")
    m = client(server, api_key_env="DEMO_KEY")
    assert m.generate(USER, [], FAST).content == "hi"
    assert "sk-secret" not in repr(m) and "sk-secret" not in m.name
    # Without the key the server refuses, and the error does not echo any key.
    with pytest.raises(ModelError) as e:
        client(server, max_retries=0).generate(USER, [], FAST)
    assert "401" in str(e.value) and "sk-secret" not in str(e.value)


def test_missing_key_variable_is_reported():
    with pytest.raises(ModelError, match="NOT_SET_ANYWHERE"):
        LiteLLMModel("openai/x", api_base="http://127.0.0.1:1/v1", api_key_env="NOT_SET_ANYWHERE")


def test_unknown_provider_is_reported():
    with pytest.raises(ModelError, match="not a model string litellm knows"):
        LiteLLMModel("nonsense-provider/xyz")


# -- concurrency ---------------------------------------------------------------------------


def test_async_calls_run_concurrently_on_one_instance(served):
    server = served(ScriptedModel([lambda messages, tools: f"echo {messages[-1]['content']}"], repeat_last=True))
    m = client(server)

    async def many():
        return await asyncio.gather(*(agenerate(m, [{"role": "user", "content": f"q{i}"}], [], FAST) for i in range(8)))

    replies = asyncio.run(many())
    assert sorted(r.content for r in replies) == sorted(f"echo q{i}" for i in range(8))


def test_threads_share_one_instance(served):
    from concurrent.futures import ThreadPoolExecutor

    server = served(ScriptedModel([lambda messages, tools: f"echo {messages[-1]['content']}"], repeat_last=True))
    m = client(server)
    with ThreadPoolExecutor(4) as pool:
        replies = list(
            pool.map(lambda i: m.generate([{"role": "user", "content": f"t{i}"}], [], FAST).content, range(12))
        )
    assert replies == [f"echo t{i}" for i in range(12)]


# -- the HTTP surface ----------------------------------------------------------------------


def test_models_endpoint_lists_the_served_name():
    url, stop = serve_in_background(ScriptedModel(["x"]), model_name="tiny")
    try:
        with urllib.request.urlopen(url + "/models", timeout=5) as r:
            body = json.loads(r.read())
        assert [m["id"] for m in body["data"]] == ["tiny"]
    finally:
        stop()


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        (b"{not json", 400, "not valid JSON"),
        ({"model": "demo"}, 400, "'messages' must be a non-empty list"),
        ({"model": "demo", "messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role must be one of"),
        ({"model": "demo", "messages": USER, "stream": "yes"}, 400, "'stream' must be true or false"),
        (
            {"model": "demo", "messages": USER, "stream": True, "stream_options": {"include_usage": 1}},
            400,
            "include_usage' must be true or false",
        ),
        (
            {"model": "demo", "messages": USER, "stream": True, "max_tokens": 0},
            400,
            "'max_tokens' must be a positive integer",
        ),
        ({"model": "demo", "messages": USER, "temperature": 9}, 400, "'temperature' must be a number in [0, 2]"),
        ({"model": "demo", "messages": USER, "max_tokens": 0}, 400, "'max_tokens' must be a positive integer"),
        ({"model": "demo", "messages": USER, "tools": [{"type": "function"}]}, 400, "tools[0] must look like"),
        ({"model": "gpt-9", "messages": USER}, 404, "not served here"),
    ],
)
def test_bad_requests_get_a_clear_4xx(served, body, status, fragment):
    server = served(ScriptedModel(["x"], repeat_last=True))
    code, payload = post(server.url + "/chat/completions", body)
    assert code == status
    assert fragment in payload["error"]["message"]


def test_unknown_route_is_404(served):
    server = served(ScriptedModel(["x"]))
    code, payload = post(server.url + "/completions", {"prompt": "x"})
    assert code == 404 and "/v1/chat/completions" in payload["error"]["message"]


def test_a_burst_of_simultaneous_connections_is_served_not_reset(served):
    """An eval at -j 16 (or 48) opens all its connections at once; none may be refused."""

    def slow(messages, tools):
        time.sleep(0.2)
        return "ok"

    server = served(ScriptedModel([slow], repeat_last=True))
    start = threading.Barrier(48)
    results: list[int] = []

    def one() -> None:
        start.wait()
        try:
            code, _ = post(server.url + "/chat/completions", {"model": "demo", "messages": USER})
        except OSError:
            code = -1
        results.append(code)

    threads = [threading.Thread(target=one) for _ in range(48)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 48


# -- streaming -----------------------------------------------------------------------------


def _stream(server: EmbeddedServer, **kwargs):
    import litellm

    async def go():
        response = await litellm.acompletion(
            model=f"openai/{server.model_name}",
            api_base=server.url,
            api_key="none",
            messages=USER,
            tools=TOOLS,
            stream=True,
            **kwargs,
        )
        return [chunk async for chunk in response]

    return asyncio.run(go())


def test_a_streamed_answer_is_openai_chunks_that_litellm_rebuilds_into_the_same_reply(served):
    import litellm

    reply = ModelResponse(
        content="Let me check.",
        tool_calls=[ToolCall(name="get_product_details", arguments={"product_id": "P1"})],
        completion_tokens=9,
    )
    server = served(ScriptedModel([reply], repeat_last=True))
    chunks = _stream(server, stream_options={"include_usage": True})
    message = litellm.stream_chunk_builder(chunks).choices[0].message
    assert message.content == "Let me check."
    [call] = message.tool_calls
    assert call.function.name == "get_product_details" and json.loads(call.function.arguments) == {"product_id": "P1"}
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    assert chunks[-1].usage.completion_tokens == 9  # the usage chunk, asked for with stream_options
    assert server.responses == {200: 1}
    # the same request without streaming: the same reply
    plain = client(server).generate(USER, TOOLS, FAST)
    assert plain.content == message.content and plain.tool_calls[0].arguments == {"product_id": "P1"}


def test_without_include_usage_no_usage_chunk_is_sent(served):
    server = served(ScriptedModel(["Hi there!"], repeat_last=True))
    chunks = _stream(server)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hi there!"
    assert all(c.choices for c in chunks)  # every chunk carries a choice: none is a usage-only chunk


def test_a_request_refused_before_the_first_token_is_a_plain_json_error(served):
    server = served(ScriptedModel(["x"]), model_name="demo")
    code, payload = post(server.url + "/chat/completions", {"model": "other", "messages": USER, "stream": True})
    assert code == 404 and "not served here" in payload["error"]["message"]


def test_streamed_content_is_always_a_prefix_of_the_final_reply():
    stream = CompletionStream("m", include_usage=True)
    sent = []
    for so_far in [
        "Hi",
        "Hi  the",
        "Hi  there\n\n\n\nfri",
        "Hi  there\n\n\n\nfriend <",
        "Hi  there\n\n\n\nfriend <tool_call>{",
        "caf\ufffd",
    ]:
        sent += [c["choices"][0]["delta"].get("content", "") for c in stream.text(so_far)]
    final = ModelResponse(
        content="Hi  there\n\nfriend",
        tool_calls=[ToolCall(name="t", arguments={"a": 1})],
        finish_reason="stop",
        prompt_tokens=5,
        completion_tokens=7,
    )
    last = stream.finish(final)
    assert "".join(sent) == "Hi  there\n\nfriend"  # blank runs collapsed as in the final reply, nothing after "<"
    assert [c["choices"][0]["delta"] for c in last[:-1]] == [
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": last[0]["choices"][0]["delta"]["tool_calls"][0]["id"],
                    "type": "function",
                    "function": {"name": "t", "arguments": '{"a": 1}'},
                }
            ]
        },
        {},
    ]
    assert last[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert last[-1]["choices"] == [] and last[-1]["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 7,
        "total_tokens": 12,
    }
    assert {c["object"] for c in last} == {"chat.completion.chunk"} and len({c["id"] for c in last}) == 1


def test_the_server_stops_at_once_while_a_client_keeps_its_connection_open():
    import http.client

    server = EmbeddedServer(ScriptedModel(["hi"]), model_name="demo").start()
    host, port = server._httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", "/v1/models")
        assert conn.getresponse().read()  # the connection stays open (keep-alive) and idle
        stopper = threading.Thread(target=server.stop, daemon=True)
        stopper.start()
        stopper.join(timeout=10)
        assert not stopper.is_alive(), "stop() waited for an idle keep-alive client"
    finally:
        conn.close()
