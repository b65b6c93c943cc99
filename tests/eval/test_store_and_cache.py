"""The run folder survives kills, and the model-call cache never keeps an error."""

from __future__ import annotations

import json

import pytest

from harnessctl.eval.cache import CallCache, EvalBackend, call_key
from harnessctl.eval.results import CaseResult
from harnessctl.eval.store import RunError, RunStore
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.types import ModelResponse, ToolCall


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
    store = RunStore.create(
        tmp_path, {"model": "m", "config": {"api_key": "sk-live-123", "jobs": 4}, "AUTH_TOKEN": "t"}
    )
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
    inner = Flaky(
        fail_times=1, error=ModelError("openai/flaky: BadRequestError 400 after 1 attempt: unknown parameter")
    )
    with pytest.raises(ModelError, match="400"):
        EvalBackend(inner, retries=3, backoff_s=0.0).generate(MSG, [], GenerationSettings())
    assert inner.calls == 1


def test_the_oracle_is_never_cached():
    from harnessctl.sim.oracle import OracleModel  # it declares cacheable = False

    assert EvalBackend(OracleModel(), cache=CallCache(":memory:")).cache is None


def test_the_harness_blind_reference_is_cached_under_the_surface_it_memorised(livecommerce, livecommerce_path):
    from harnessctl.models.registry import resolve_model
    from harnessctl.sim.oracle import OracleBlindModel

    def blind(rev: str | None, commit: str | None) -> OracleBlindModel:
        surface = {"harness": "livecommerce", "path": "harnesses/livecommerce", "rev": rev, "commit": commit}
        return OracleBlindModel(livecommerce, memorised=surface)

    cache = CallCache(":memory:")
    v1, v3 = (EvalBackend(blind(rev, commit), cache=cache) for rev, commit in (("v1", "a" * 40), ("v3", "b" * 40)))
    assert v1.identity == f"oracle-blind:harnesses/livecommerce@v1#{'a' * 40}"
    assert v3.identity == f"oracle-blind:harnesses/livecommerce@v3#{'b' * 40}"
    settings = GenerationSettings()
    cache.put(v1._key(MSG, [], settings), ModelResponse(content="as v1 names it"))
    assert cache.get(v3._key(MSG, [], settings)) is None  # v3's reply is not v1's
    again = EvalBackend(blind("v1", "a" * 40), cache=cache)
    assert cache.get(again._key(MSG, [], settings)).content == "as v1 names it"
    moved = EvalBackend(blind("v1", "c" * 40), cache=cache)  # the tag v1 moved to another commit
    assert cache.get(moved._key(MSG, [], settings)) is None
    # a folder, from its model string: the folder names it
    folder = EvalBackend(resolve_model(f"oracle-blind:{livecommerce_path}"), cache=cache)
    assert folder.identity == f"oracle-blind:{livecommerce_path}" and folder.name == "oracle-blind"


# -- settings survive, secrets do not --------------------------------------------------------------


def test_settings_keep_their_names_and_types_while_secrets_go(tmp_path, monkeypatch):
    monkeypatch.setenv("MYPROVIDER_API_KEY", "sk-secret-value-123")
    manifest = {
        "model": "m",
        "api_base": "http://h/v1?key=sk-secret-value-123",
        "config": {"max_tokens": 48, "temperature": 0.7, "api_key_env": "MYPROVIDER_API_KEY", "api_key": "x"},
        "AUTH_TOKEN": "t",
    }
    store = RunStore.create(tmp_path, manifest, run_id="typed")
    text = (store.root / "manifest.json").read_text()
    saved = store.manifest
    assert saved["config"]["max_tokens"] == 48 and saved["config"]["temperature"] == 0.7
    assert saved["config"]["api_key_env"] == "MYPROVIDER_API_KEY"  # the variable's name, not its value
    assert (
        "sk-secret-value-123" not in text
        and saved["config"]["api_key"] == "<redacted>"
        and saved["AUTH_TOKEN"] == "<redacted>"
    )


def test_a_config_read_back_is_checked_field_by_field():
    from harnessctl.eval.runner import EvalConfig

    config = EvalConfig(suites=["variant"], max_tokens=48, temperature=0.5, api_key_env="K")
    from dataclasses import asdict

    assert EvalConfig.from_dict(json.loads(json.dumps(asdict(config)))) == config
    with pytest.raises(ValueError, match="'max_tokens' is '<redacted>', not an integer"):
        EvalConfig.from_dict({**asdict(config), "max_tokens": "<redacted>"})


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", ".", "", "name with space", "x\\y"])
def test_run_ids_are_names(tmp_path, bad):
    from harnessctl.eval.store import check_run_id

    with pytest.raises(RunError, match="a run id is a name"):
        check_run_id(bad)
    with pytest.raises(RunError):
        RunStore.create(tmp_path / "runs", {"model": "m"}, run_id=bad)
    assert not (tmp_path / "escape").exists()


def test_a_damaged_manifest_is_refused_with_what_to_do(tmp_path):
    store = RunStore.create(tmp_path, {"model": "m"}, run_id="dmg")
    (store.root / "manifest.json").write_text("{}")
    with pytest.raises(
        RunError, match=r"damaged manifest \(missing model, config, planned, case_ids\).*start a new run"
    ):
        RunStore.open(store.root).checked_manifest()


def test_atomic_writes_leave_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    from harnessctl.eval import store as store_mod

    path = tmp_path / "suite.jsonl"
    store_mod.atomic_write(path, "old\n")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_mod.os, "replace", boom)
    with pytest.raises(OSError):
        store_mod.atomic_write(path, "new\n")
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["suite.jsonl"]


def test_a_local_models_cache_key_changes_when_its_files_change(tmp_path):
    from harnessctl.eval.cache import model_identity

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights v1")
    (folder / "tokenizer.json").write_text("{}")

    class Local:
        name = f"local:{folder}"
        path = folder

    first = model_identity(Local())
    assert first.startswith(f"local:{folder}#") and model_identity(Local()) == first
    (folder / "model.safetensors").write_bytes(b"weights v2")  # retrained into the same folder
    second = model_identity(Local())
    (folder / "tokenizer.json").write_text('{"v": 2}')
    assert len({first, second, model_identity(Local())}) == 3
    assert call_key(first, None, MSG, [], GenerationSettings()) != call_key(second, None, MSG, [], GenerationSettings())


def test_each_episode_counts_its_own_calls_and_hits():
    cache = CallCache(":memory:")
    base = EvalBackend(Flaky(), cache=cache)
    one = base.for_episode(None, None)
    assert one.for_episode(None, None) is one  # the runtime binds again: same counts
    one.generate(MSG, [], GenerationSettings())
    two = base.for_episode(None, None)
    two.generate(MSG, [], GenerationSettings())
    assert (one.calls, one.cache_hits, two.calls, two.cache_hits) == (1, 0, 1, 1)
