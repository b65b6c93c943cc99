"""The runtime's seam for trainers: the loop stepped by its caller, the answer key kept from
policies, the tool environment passed in, and no import cycle between runtime, models and sim."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from harnessctl.harness import load_harness
from harnessctl.models.scripted import ScriptedModel
from harnessctl.models.types import ModelResponse
from harnessctl.runtime import Episode, EpisodeRecord, ModelRequest, Termination, run_episode
from harnessctl.sim import OracleModel, case_from_query


@pytest.fixture(scope="module")
def shipped(livecommerce_path):
    return load_harness(livecommerce_path)


def call(tool: str, **args) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


SCRIPT = [
    call("load_skill", name="explain_price"),
    call("get_product_details", product_id="P001"),
    "It is $18.99 live!",
]


def strip_times(d):
    if isinstance(d, dict):
        return {k: strip_times(v) for k, v in d.items() if k not in ("latency_s",)}
    if isinstance(d, list):
        return [strip_times(v) for v in d]
    return d


def test_stepping_the_episode_by_hand_gives_the_same_record_as_run_episode(shipped):
    case = case_from_query("how much is the one on screen?", "P001")
    episode = Episode(shipped, case, model_name="scripted")
    out = episode.reset()
    requests = []
    policy = ScriptedModel(SCRIPT, name="scripted")
    while not isinstance(out, EpisodeRecord):
        assert isinstance(out, ModelRequest) and out.messages[0]["role"] == "system" and out.tools
        requests.append(out)
        out = episode.step(policy.generate(out.messages, out.tools, out.settings))
    assert episode.done and episode.record is out and len(requests) == 3
    assert requests[1].messages[-1]["role"] == "tool"  # the skill text came back as a tool turn
    reference = run_episode(shipped, case, ScriptedModel(SCRIPT, name="scripted"))
    assert strip_times(out.to_dict()) == strip_times(reference.to_dict())
    with pytest.raises(RuntimeError, match="over"):
        episode.step(ModelResponse(content="again"))


def test_a_model_failure_fed_to_step_ends_the_episode_as_data(shipped):
    episode = Episode(shipped, case_from_query("price?", "P001"))
    episode.reset()
    rec = episode.step(TimeoutError("the sampler died"))
    assert isinstance(rec, EpisodeRecord) and rec.termination is Termination.MODEL_ERROR
    assert "the sampler died" in rec.model_steps[-1].error


def test_only_the_oracle_is_bound_to_the_answer_key(shipped):
    seen = {}

    class Spy:
        name = "spy"

        def for_episode(self, case, harness):
            seen["case"] = case
            return ScriptedModel(["Hi!"])

    case = case_from_query("how much is the one on screen?", "P001")
    assert case.expect.skill and case.intent  # the case does carry an answer key
    run_episode(shipped, case, Spy())
    view = seen["case"]
    assert view.expect.skill is None and not view.expect.calls and not view.expect.facts
    assert view.intent == "" and view.slots == {} and view.faults == {}
    assert view.query == case.query and view.context == case.context and view.id == case.id
    assert case.expect.skill, "the caller's case is untouched"
    rec = run_episode(shipped, case, OracleModel())  # the oracle still plans from the full case
    assert rec.skills_loaded == [case.expect.skill]


def test_the_environment_comes_from_the_caller_or_the_case_never_from_a_runtime_import(shipped):
    bare = SimpleNamespace(**vars(case_from_query("price?", "P001")))  # a case that brings no world

    rec = run_episode(shipped, bare, ScriptedModel(["Hi!"]))
    assert rec.termination is Termination.MODEL_ERROR and "pass env=" in rec.model_steps[0].error
    code = (
        "import sys; import harnessctl.runtime, harnessctl.models.base, harnessctl.models.toolcall_text;"
        "bad = [m for m in sys.modules if m.startswith('harnessctl.sim')];"
        "import harnessctl.models.types, harnessctl.models.scripted;"
        "print(json.dumps(bad))"
    )
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
    code = (
        "import sys, json, harnessctl.models.types, harnessctl.models.toolcall_text, harnessctl.models.base;"
        "print(json.dumps([m for m in sys.modules if m.startswith('harnessctl.runtime')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
