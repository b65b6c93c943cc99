"""The run folder survives kills, and the model-call cache never keeps an error."""

from __future__ import annotations

import json

import pytest

from harnessctl.eval.cache import CallCache, EvalBackend, call_key
from harnessctl.eval.results import CaseResult
from harnessctl.eval.store import RunError, RunStore
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.runtime.record import ModelResponse, ToolCall


def result(i: int) -> CaseResult:
    return CaseResult(suite="livestream", case_id=f"c{i}", score=1.0, passed=True, record={"reply": "x" * 50})


def test_each_result_is_on_disk_as_soon_as_append_returns(tmp_path):
    store = RunStore.create(tmp_path, {"model": "oracle", "suite": "livestream"})
    store.append(result(1))
    # Read the file directly, with the writer still open: the line is already there.
    lines = (store.root / "records.jsonl").read_text().splitlines()
    assert [json.loads(x)["case_id"] for x in lines] == ["c1"]
    assert store.manifest["run_id"] == store.root.name


def test_a_torn_last_line_is_ignored_then_cut_before_resuming(tmp_path):
    store = RunStore.create(tmp_path, {"model": "m"}, run_id="r1")
    for i in range(3):
        store.append(result(i))
    store.close()
    path = store.root / "records.jsonl"
    path.write_bytes(path.read_bytes() + b'{"suite":"livestream","case_id":"c3","sco')  # killed mid-write
    reopened = RunStore.open("r1", tmp_path)
    assert [r.case_id for r in reopened.results()] == ["c0", "c1", "c2"]
    assert reopened.repair() > 0
    reopened.append(result(3))
    assert [r.case_id for r in RunStore.open(reopened.root).results()] == ["c0", "c1", "c2", "c3"]


def test_damage_in_the_middle_names_the_line(tmp_path):
    store = RunStore.create(tmp_path, {"model": "m"}, run_id="r2")
    store.append(result(0))
    store.close()
    path = store.root / "records.jsonl"
    path.write_text("not json\n" + path.read_text())
    with pytest.raises(RunError, match=r"records.jsonl:1: damaged record"):
        RunStore.open(store.root).results()


def test_manifests_never_hold_secrets(tmp_path):
    store = RunStore.create(tmp_path, {"model": "m", "config": {"api_key": "sk-live-123", "jobs": 4}, "AUTH_TOKEN": "t"})
    text = (store.root / "manifest.json").read_text()
    assert "sk-live-123" not in text and '"t"' not in text and '"jobs": 4' in text


def test_unknown_runs_and_taken_ids_are_clear_errors(tmp_path):
    with pytest.raises(RunError, match="no such run"):
        RunStore.open("nope", tmp_path)
    RunStore.create(tmp_path, {"model": "m"}, run_id="same")
    with pytest.raises(RunError, match="--resume same"):
        RunStore.create(tmp_path, {"model": "m"}, run_id="same")


class Flaky:
    """A backend that fails with a transport error ``fail_times`` times, then answers."""

    name = "openai/flaky"

    def __init__(self, fail_times: int = 0, error: Exception | None = None):
        self.fail_times = fail_times
        self.error = error or ModelError("openai/flaky: APIConnectionError after 1 attempt: connection refused")
        self.calls = 0

    def generate(self, messages, tools, settings):
        self.calls += 1
        if self.calls <= self.fail_times:
            raise self.error
        return ModelResponse(content=f"answer {self.calls}", tool_calls=[ToolCall(name="t", arguments={"a": 1})])

    def for_episode(self, case, harness):
        return self


MSG = [{"role": "user", "content": "price?"}]


def test_the_cache_key_covers_model_endpoint_messages_tools_and_settings():
    s = GenerationSettings()
    base = call_key("m", "http://a/v1", MSG, [], s)
    assert base == call_key("m", "http://a/v1", MSG, [], GenerationSettings(timeout_s=5))  # timeout: not the answer
    others = [
        call_key("m2", "http://a/v1", MSG, [], s),
        call_key("m", "http://b/v1", MSG, [], s),
        call_key("m", "http://a/v1", [{"role": "user", "content": "stock?"}], [], s),
        call_key("m", "http://a/v1", MSG, [{"type": "function", "function": {"name": "x"}}], s),
        call_key("m", "http://a/v1", MSG, [], GenerationSettings(temperature=0.7)),
        call_key("m", "http://a/v1", MSG, [], GenerationSettings(seed=1)),
    ]
    assert base not in others and len(set(others)) == len(others)


def test_cached_answers_come_back_whole_and_skip_the_model(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    inner = Flaky()
    b = EvalBackend(inner, cache=cache)
    first = b.generate(MSG, [], GenerationSettings())
    again = EvalBackend(inner, cache=CallCache(tmp_path / "calls.sqlite")).generate(MSG, [], GenerationSettings())
    assert inner.calls == 1 and again == first and again.tool_calls[0].arguments == {"a": 1}


def test_transport_errors_are_retried_and_never_cached():
    cache = CallCache(":memory:")
    inner = Flaky(fail_times=2)
    b = EvalBackend(inner, cache=cache, retries=2, backoff_s=0.0)
    assert b.generate(MSG, [], GenerationSettings()).content == "answer 3"
    assert len(cache) == 1
    broken = EvalBackend(Flaky(fail_times=5), cache=CallCache(":memory:"), retries=1, backoff_s=0.0)
    with pytest.raises(ModelError):
        broken.generate(MSG, [], GenerationSettings())
    assert len(broken.cache) == 0


def test_bad_requests_are_not_retried():
    inner = Flaky(fail_times=1, error=ModelError("openai/flaky: BadRequestError 400 after 1 attempt: unknown parameter"))
    with pytest.raises(ModelError, match="400"):
        EvalBackend(inner, retries=3, backoff_s=0.0).generate(MSG, [], GenerationSettings())
    assert inner.calls == 1


def test_the_oracle_is_never_cached():
    class Oracle(Flaky):
        name = "oracle"

    assert EvalBackend(Oracle(), cache=CallCache(":memory:")).cache is None
