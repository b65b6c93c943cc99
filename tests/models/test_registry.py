"""The model registry owns what a model string means: kinds are registered by the layer that
defines their backend, and the simulator's are found even where nothing imported it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harnessctl.models import registry
from harnessctl.models.base import ModelError, cacheable, reads_answer_key
from harnessctl.models.registry import model_kind, register_model, resolve_model


@pytest.fixture
def scratch_kinds(monkeypatch):
    """Kinds registered by a test go when it ends (those of the entry points are registered first)."""
    registry.load_entry_points()
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))


def test_a_registered_kind_resolves_its_strings_and_refuses_an_api_base(scratch_kinds):
    built = []

    class Echo:
        name = "echo"

    def factory(spec):
        built.append(spec)
        return Echo()

    register_model("echo", factory, label="the echo", separators=("@",))
    assert resolve_model("echo").name == "echo" and resolve_model(" echo@2 ").name == "echo"
    assert built == ["echo", "echo@2"]
    assert model_kind("echo:x") is None and model_kind("echoes") is None  # only the forms it declares
    with pytest.raises(ModelError, match="the echo runs in process"):
        resolve_model("echo", api_base="http://127.0.0.1:9/v1")


def test_the_simulators_kinds_and_what_they_declare():
    import harnessctl.sim  # noqa: F401 - registers oracle and oracle-blind

    assert model_kind("oracle").name == "oracle" and model_kind("oracle:x") is None
    assert {model_kind(s).name for s in ("oracle-blind", "oracle-blind@v1", "oracle-blind:h")} == {"oracle-blind"}
    oracle, blind = resolve_model("oracle"), resolve_model("oracle-blind")
    assert reads_answer_key(oracle) and not cacheable(oracle)
    assert reads_answer_key(blind) and cacheable(blind)
    assert registry.memorised_surface("oracle-blind")["harness"] == "livecommerce"
    assert registry.memorised_surface("oracle") is None and registry.memorised_surface("openai/x") is None
    assert not registry.answers_instructions("oracle") and not registry.answers_instructions("oracle-blind@v1")


def test_eval_leaves_ifeval_out_for_a_kind_that_answers_no_instructions(scratch_kinds):
    from harnessctl.eval.runner import EvalConfig, skipped_suites

    register_model("policy", lambda spec: None, answers_instructions=False)
    register_model("chat", lambda spec: None)
    suites = ["livestream", "ifeval"]
    assert list(skipped_suites(EvalConfig(model="policy", suites=suites))) == ["ifeval"]
    assert skipped_suites(EvalConfig(model="policy", suites=["livestream"])) == {}
    assert skipped_suites(EvalConfig(model="chat", suites=suites)) == {}
    assert skipped_suites(EvalConfig(model="openai/x", suites=suites)) == {}


def test_a_backend_that_declares_nothing_has_the_protocols_defaults():
    class Bare:
        name = "bare"

    assert not reads_answer_key(Bare()) and cacheable(Bare())


def test_the_oracle_resolves_where_only_the_models_layer_was_imported(repo_root):
    code = (
        "import sys; from harnessctl.models.registry import resolve_model; "
        "assert 'harnessctl.sim' not in sys.modules; print(resolve_model('oracle').name)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "oracle"
