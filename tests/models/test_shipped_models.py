"""Shipping a study's trained arm inside the package, and naming it ``shipped:NAME``.

`model ship` copies only what inference needs from a finished arm (never checkpoints or optimizer
state), atomically, with a SHIPPED.json that says where it came from; `shipped:NAME` then works
wherever a model string does, in process and served. The package's data folder is a temporary
one here: no test depends on a real shipped checkpoint.
"""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.experiment import quick_plan
from harnessctl.experiment.ship import reproduce_command
from harnessctl.models import registry
from harnessctl.models.base import ModelError
from harnessctl.models.registry import expand_model_spec, resolve_model, shipped_names
from harnessctl.models.shipped import SHIPPED_FILE, list_shipped

runner = CliRunner()
SCORES = {"livestream": 81.5, "variant": 79.0, "robustness": 70.25, "ifeval": 40.0, "tool_faults": 66.7}


def _study(root, tiny_model_path, *, arm="hat", finished=True, results=True):
    """A study folder as `experiment hat` leaves it: plan, the arm's trainer output folder (the
    final model at its top, a checkpoint with optimizer state beside it), arm.json, results.json."""
    root.mkdir(parents=True)
    (root / "plan.json").write_text(json.dumps(quick_plan().to_dict()))
    model = root / "arms" / arm / "model"
    shutil.copytree(tiny_model_path, model)
    (model / "train.json").write_text(json.dumps({"stage": "rl", "parent": "arms/hsa-sft-opd/model"}))
    (model / "model.safetensors").chmod(0o600)  # as a trainer may save it
    ckpt = model / "checkpoint-30"
    shutil.copytree(tiny_model_path, ckpt)
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json", "training_args.bin"):
        (ckpt / name).write_bytes(b"state")
        (model / name).write_bytes(b"state")  # a trainer may leave these at the top too
    (model / "README.md").write_text("model card")
    if finished:
        arm_json = {
            "name": arm,
            "label": "HAT (+ HSA-RL)",
            "stage": "rl",
            "parent": "hsa-sft-opd",
            "status": "done",
            "metrics": {"scores": {"livestream": 1.0}, "slices": {}, "latency": {"p50_s": 0.2, "p95_s": 0.4}},
            "finished": "2026-12-03T12:00:00Z",
        }
        (root / "arms" / arm / "arm.json").write_text(json.dumps(arm_json))
    if results:
        (root / "results.json").write_text(json.dumps({"scores": {arm: SCORES}, "eval_cases": 10}))
    return root


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    """The package's model data folder, redirected to a temporary one (shipped models and the default)."""
    root = tmp_path / "package-data"
    monkeypatch.setattr(registry, "SHIPPED_DATA_DIR", root)
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", root / "hat")
    monkeypatch.setattr("harnessctl.models.shipped.SHIPPED_DATA_DIR", root)
    monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)  # no user-trained default here
    return root


def _ship(*args):
    return runner.invoke(app, ["model", "ship", *args])


def test_ship_copies_only_what_inference_needs_with_its_provenance(tmp_path, tiny_model_path, data_root):
    study = _study(tmp_path / "experiments" / "quick", tiny_model_path)
    result = _ship("--study", str(study), "--arm", "hat", "--json")
    assert result.exit_code == 0, result.output
    shipped = data_root / "hat"
    names = sorted(p.name for p in shipped.iterdir())
    assert not [n for n in names if n.startswith("checkpoint-")] and not (shipped / "optimizer.pt").exists()
    assert {"config.json", "model.safetensors", "tokenizer.json", "train.json", SHIPPED_FILE} <= set(names)
    assert {"README.md", "scheduler.pt", "rng_state.pth", "trainer_state.json", "training_args.bin"}.isdisjoint(names)
    assert (shipped / "chat_template.jinja").is_file() == (tiny_model_path / "chat_template.jinja").is_file()
    info = json.loads((shipped / SHIPPED_FILE).read_text())
    assert info["study"] == "quick" and info["arm"] == "hat" and info["stage"] == "rl"
    assert info["scores"] == SCORES and info["scores_from"] == "results.json"
    assert info["reproduce"] == "harnessctl experiment hat --quick --id quick"
    assert set(info["files"]) == set(names) - {SHIPPED_FILE}
    assert json.loads(result.stdout)["model"] == "shipped:hat"
    assert not [p for p in data_root.iterdir() if p.name.startswith(".")]  # no temporary folder left
    assert all(p.stat().st_mode & 0o444 == 0o444 for p in [shipped, *shipped.iterdir()])  # readable by all


def test_scores_come_from_the_arm_when_the_study_has_no_results_yet(tmp_path, tiny_model_path, data_root):
    study = _study(tmp_path / "s", tiny_model_path, arm="fixed-sft", results=False)
    assert _ship("--study", str(study), "--arm", "fixed-sft").exit_code == 0
    info = json.loads((data_root / "fixed-sft" / SHIPPED_FILE).read_text())
    assert info["scores"] == {"livestream": 1.0} and info["scores_from"] == "arm.json"


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("unfinished", ["--arm", "hat"], "is not finished (no arms/hat/arm.json)"),
        ("finished", ["--arm", "nope"], "--arm nope: is not an arm of this study"),
        ("not-a-study", ["--arm", "hat"], "not a study folder (no plan.json)"),
        ("finished", ["--arm", "hat", "--as", "Bad Name"], "lower-case letters"),
        ("no-weights", ["--arm", "hat"], "not a finished model folder (missing weights"),
    ],
)
def test_refusals_say_what_to_do_with_exit_2_and_no_traceback(
    tmp_path, tiny_model_path, data_root, setup, args, message
):
    study = tmp_path / "study"
    if setup == "not-a-study":
        study.mkdir()
    else:
        _study(study, tiny_model_path, finished=setup != "unfinished")
    if setup == "no-weights":
        (study / "arms" / "hat" / "model" / "model.safetensors").unlink()
    result = _ship("--study", str(study), *args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output
    assert not data_root.exists() or not any(data_root.iterdir())


def test_an_unfinished_arm_is_refused_with_the_command_that_finishes_it(tmp_path, tiny_model_path, data_root):
    study = _study(tmp_path / "experiments" / "mine", tiny_model_path, finished=False)
    result = _ship("--study", str(study), "--arm", "hat")
    assert result.exit_code == 2
    assert "harnessctl experiment hat --quick --id mine" in result.stderr


def test_a_shipped_name_is_replaced_only_with_force(tmp_path, tiny_model_path, data_root):
    first = _study(tmp_path / "a", tiny_model_path)
    second = _study(tmp_path / "b", tiny_model_path)
    assert _ship("--study", str(first), "--arm", "hat").exit_code == 0
    refused = _ship("--study", str(second), "--arm", "hat")
    assert refused.exit_code == 2 and "pass --force to replace it" in refused.stderr
    assert json.loads((data_root / "hat" / SHIPPED_FILE).read_text())["study"] == "a"
    assert _ship("--study", str(second), "--arm", "hat", "--force").exit_code == 0
    assert json.loads((data_root / "hat" / SHIPPED_FILE).read_text())["study"] == "b"
    assert sorted(p.name for p in data_root.iterdir()) == ["hat"]


def test_the_reproducing_command_names_every_setting_that_differs_from_the_preset():
    plan = quick_plan(seed=3, ablations=True).to_dict()
    plan["eval_limit"] = 40
    plan["stage_overrides"]["sft"]["max_steps"] = "600"
    assert reproduce_command(plan, "q2") == (
        "harnessctl experiment hat --quick --id q2 --seed 3 --ablations --set eval_limit=40 --set sft.max_steps=600"
    )


# -- shipped:NAME -----------------------------------------------------------------------------


def _fake_checkpoint(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")


def test_shipped_names_resolve_to_their_folder_and_unknown_names_list_the_shipped_ones(tmp_path):
    for name in ("hat", "fixed-sft"):
        _fake_checkpoint(tmp_path / name)
    (tmp_path / ".hat-partial").mkdir()  # a copy in progress is never a shipped model
    (tmp_path / ".hat-partial" / "config.json").write_text("{}")
    assert shipped_names(tmp_path) == ["fixed-sft", "hat"]
    assert expand_model_spec("shipped:fixed-sft", tmp_path) == f"local:{tmp_path / 'fixed-sft'}"
    assert expand_model_spec("local:x", tmp_path) == "local:x"
    with pytest.raises(ModelError, match=r"shipped:nope: no such shipped model \(shipped: fixed-sft, hat\)"):
        expand_model_spec("shipped:nope", tmp_path)
    with pytest.raises(ModelError, match="none is shipped in this package"):
        expand_model_spec("shipped:hat", tmp_path / "empty")


def test_an_unknown_shipped_name_is_one_line_and_exit_2_in_eval(data_root, livecommerce_path, repo_root):
    _fake_checkpoint(data_root / "hat")
    result = runner.invoke(
        app,
        ["eval", "--suite", "livestream", "--limit", "1", "--model", "shipped:fixed", "-H", str(livecommerce_path)]
        + ["--evals-dir", str(repo_root / "evals")],
    )
    assert result.exit_code == 2, result.output
    assert "shipped:fixed: no such shipped model (shipped: hat)" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_serve_takes_a_shipped_name_and_refuses_an_unknown_one_in_one_line(data_root):
    _fake_checkpoint(data_root / "hat")
    result = runner.invoke(app, ["serve", "shipped:fixed-sft"])
    assert result.exit_code == 2 and "shipped:fixed-sft: no such shipped model (shipped: hat)" in result.stderr
    assert "Traceback" not in result.output


def test_a_shipped_model_runs_in_process_and_served(tmp_path, tiny_model_path, data_root, livecommerce_path):
    from harnessctl.models.base import GenerationSettings
    from harnessctl.models.litellm_backend import LiteLLMModel
    from harnessctl.models.server import EmbeddedServer

    assert _ship("--study", str(_study(tmp_path / "s", tiny_model_path)), "--arm", "hat").exit_code == 0
    result = runner.invoke(
        app,
        ["run", "-q", "how much?", "-p", "P003", "-H", str(livecommerce_path), "-m", "shipped:hat", "--max-tokens", "8"]
        + ["--json"],
    )
    assert result.exit_code == 0, result.output
    # labelled by its name, not the folder it is installed in
    assert json.loads(result.stdout)["record"]["model"] == "shipped:hat"
    server = EmbeddedServer(resolve_model("shipped:hat"), port=0).start()
    try:
        assert server.model_name == "hat"
        reply = LiteLLMModel("openai/hat", api_base=server.url).generate(
            [{"role": "user", "content": "hi"}], [], GenerationSettings(max_tokens=4, timeout_s=30)
        )
        assert reply.completion_tokens is None or reply.completion_tokens <= 4
    finally:
        server.stop()


def test_model_list_shows_shipped_models_their_scores_and_why_one_is_the_default(
    tmp_path, tiny_model_path, data_root, monkeypatch
):
    empty = runner.invoke(app, ["model", "list"])
    assert empty.exit_code == 0 and "no model is shipped" in empty.stdout and "default model: oracle" in empty.stdout
    for arm in ("hat", "fixed-sft"):
        assert _ship("--study", str(_study(tmp_path / arm, tiny_model_path, arm=arm)), "--arm", arm).exit_code == 0
    listing = json.loads(runner.invoke(app, ["model", "list", "--json"]).stdout)
    assert [m["model"] for m in listing["shipped"]] == ["shipped:fixed-sft", "shipped:hat"]
    assert [m["default"] for m in listing["shipped"]] == [False, True]
    assert listing["shipped"][1]["scores"]["variant"] == 79.0
    assert listing["default"] == {"model": "shipped:hat", "source": "shipped", "why": listing["default"]["why"]}
    human = runner.invoke(app, ["model", "list"]).stdout
    assert "shipped:fixed-sft" in human and "81.5" in human and "shipped:hat *" in human
    assert "default model: shipped:hat" in human
    monkeypatch.setenv("HARNESSCTL_MODEL", "openai/mia")
    listing = json.loads(runner.invoke(app, ["model", "list", "--json"]).stdout)
    assert listing["default"]["source"] == "env" and listing["default"]["model"] == "openai/mia"
    assert not any(m["default"] for m in listing["shipped"])
    monkeypatch.setenv("HARNESSCTL_MODEL", "shipped:fixed-sft")
    listing = json.loads(runner.invoke(app, ["model", "list", "--json"]).stdout)
    assert listing["default"]["model"] == "shipped:fixed-sft" and listing["default"]["source"] == "env"
    assert [m["default"] for m in listing["shipped"]] == [True, False]
    assert [m.name for m in list_shipped(data_root)] == ["fixed-sft", "hat"]


def test_training_starts_from_a_shipped_model_by_its_name(data_root, tmp_path):
    (data_root / "hat").mkdir(parents=True)
    (data_root / "hat" / "config.json").write_text("{}")  # no weights: the trainer names the folder it was given
    for model, message in (
        ("shipped:hat", f"{data_root / 'hat'}: not a checkpoint (missing model weights"),
        ("shipped:nope", "shipped:nope: no such shipped model (shipped: hat)"),
    ):
        result = runner.invoke(
            app, ["train", "sft", "--model", model, "--data", str(tmp_path), "--out", str(tmp_path / "o")]
        )
        assert result.exit_code == 2 and message in " ".join(result.stderr.split()), result.output
        assert "Traceback" not in result.output


def _adapter_study(root, base):
    """A study whose hat arm is a LoRA adapter on the pretrained base ``base``, as the trainer saves it."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from harnessctl.models.adapters import base_entry, save_adapter

    root.mkdir(parents=True)
    (root / "plan.json").write_text(json.dumps(quick_plan().to_dict()))
    model = root / "arms" / "hat" / "model"
    peft_model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base), LoraConfig(r=2, target_modules=["q_proj", "v_proj"])
    )
    save_adapter(peft_model, model)
    (model / "checkpoint-4").mkdir()
    (model / "checkpoint-4" / "optimizer.pt").write_bytes(b"state")
    manifest = {"stage": "rl", "parent": "arms/hsa-sft-opd/model", "base": base_entry(str(base), base)}
    (model / "train.json").write_text(json.dumps(manifest))
    arm_json = {"name": "hat", "stage": "rl", "status": "done", "metrics": {"scores": {}, "slices": {}}}
    (root / "arms" / "hat" / "arm.json").write_text(json.dumps(arm_json))
    (root / "results.json").write_text(json.dumps({"scores": {"hat": SCORES}, "eval_cases": 10}))
    return root


def test_an_adapter_ships_without_its_base_and_loads_onto_the_base_it_names(
    tmp_path, small_base, data_root, livecommerce_path
):
    result = _ship("--study", str(_adapter_study(tmp_path / "s", small_base)), "--arm", "hat")
    assert result.exit_code == 0, result.output
    shipped = data_root / "hat"
    assert {p.name for p in shipped.iterdir()} == {"adapter_config.json", "adapter_model.safetensors", "train.json"} | {
        SHIPPED_FILE
    }
    assert shipped_names(data_root) == ["hat"]
    result = runner.invoke(
        app,
        [
            "run",
            "-q",
            "how much?",
            "-p",
            "P003",
            "-H",
            str(livecommerce_path),
            "-m",
            "shipped:hat",
            "--max-tokens",
            "4",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["record"]["model"] == "shipped:hat"


def test_an_adapter_folder_without_the_manifest_naming_its_base_is_refused(tmp_path, small_base, data_root):
    study = _adapter_study(tmp_path / "s", small_base)
    (study / "arms" / "hat" / "model" / "train.json").unlink()
    result = _ship("--study", str(study), "--arm", "hat")
    assert result.exit_code == 2 and "train.json (names the base)" in result.output and "Traceback" not in result.output
