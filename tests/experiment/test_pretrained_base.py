"""A study on a pretrained base: the base arm is the base itself, linked, never trained; the SFT
arms train LoRA adapters on it and record it by fingerprint; OPD distills to it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.models.bases import base_fingerprint

runner = CliRunner()


def test_the_base_arm_links_the_base_and_the_sft_arm_trains_an_adapter_on_it(tmp_path, small_base):
    config = tmp_path / "small-lora.yaml"
    config.write_text(
        "device: cpu\nlora_r: 4\nlora_alpha: 8\nlora_layers: '1'\nsave_steps: 2\nlogging_steps: 1\n"
        "sft:\n  per_device_batch_size: 2\n  heldout_rows: 0\n  learning_rate: 0.01\n"
    )
    common = [
        "experiment", "hat", "--quick", "--id", "pre", "--out", str(tmp_path / "studies"),
        "--set", f"pretrained_base={small_base}", "--set", f"train_config={config}",
        "--set", "data_n=24", "--set", "data_variants=4", "--set", "sft.max_steps=2", "--train-only",
    ]  # fmt: skip
    first = runner.invoke(app, [*common, "--arm", "base"])
    assert first.exit_code == 0, first.output
    arm = tmp_path / "studies" / "pre" / "arms"
    assert (arm / "base" / "model").is_symlink() and (arm / "base" / "model").resolve() == small_base.resolve()
    assert json.loads((arm / "base" / "train.json").read_text())["steps"] == 0
    second = runner.invoke(app, [*common, "--arm", "hsa-sft"])
    assert second.exit_code == 0, second.output
    model = arm / "hsa-sft" / "model"
    assert (model / "adapter_model.safetensors").is_file() and not (model / "model.safetensors").exists()
    assert json.loads((model / "train.json").read_text())["base"]["fingerprint"] == base_fingerprint(small_base)


def test_a_study_on_a_base_that_is_not_fetched_says_how_to_fetch_it(tmp_path):
    result = runner.invoke(
        app,
        ["experiment", "hat", "--base", "smollm2-135m", "--out", str(tmp_path), "--train-only"],
        env={"HARNESSCTL_CACHE": str(tmp_path / "empty-cache")},
    )
    assert result.exit_code == 2
    assert "harnessctl model fetch smollm2-135m" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_every_arm_of_a_study_on_a_pretrained_base_trains_an_adapter_and_opd_distills_to_the_base(tmp_path, small_base):
    config = tmp_path / "small-lora.yaml"
    config.write_text(
        "device: cpu\nlora_r: 4\nlora_alpha: 8\nlora_layers: '1'\nsave_steps: 2\nlogging_steps: 1\n"
        "sft:\n  per_device_batch_size: 2\n  heldout_rows: 0\n  learning_rate: 0.01\n"
        "distill:\n  per_device_batch_size: 2\n  max_completion_length: 8\n"
        "rl:\n  per_device_batch_size: 2\n  num_generations: 2\n  max_completion_length: 16\n  max_turn_tokens: 16\n"
    )
    result = runner.invoke(
        app,
        [
            "experiment", "hat", "--quick", "--id", "pre", "--out", str(tmp_path / "studies"),
            "--set", f"pretrained_base={small_base}", "--set", f"train_config={config}",
            "--set", "data_n=24", "--set", "data_variants=4", "--set", "sft.max_steps=2",
            "--set", "distill.max_steps=1", "--set", "distill.n_prompts=4",
            "--set", "rl.max_steps=1", "--set", "rl.cases=4", "--train-only",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    arms = tmp_path / "studies" / "pre" / "arms"
    fingerprint = base_fingerprint(small_base)
    for name, parent in (("hsa-sft-opd", "hsa-sft"), ("hat", "hsa-sft-opd")):
        model = arms / name / "model"
        assert (model / "adapter_model.safetensors").is_file() and not (model / "model.safetensors").exists()
        manifest = json.loads((model / "train.json").read_text())
        assert manifest["base"]["fingerprint"] == fingerprint
        assert manifest["stage"] in ("distill", "rl") and manifest["parent"].endswith(f"{parent}/model")
    distill = json.loads((arms / "hsa-sft-opd" / "model" / "train.json").read_text())
    assert Path(distill["config"]["teacher"]).resolve() == small_base.resolve()  # reverse KL to the base itself


def test_a_study_on_a_pretrained_base_evaluates_its_arms_through_llama_cpp_on_a_cpu(tmp_path, small_base):
    common = [
        "experiment", "hat", "--quick", "--id", "pre", "--out", str(tmp_path / "studies"),
        "--set", f"pretrained_base={small_base}", "--set", "data_n=24", "--set", "data_variants=4",
        "--set", "eval_limit=1", "--set", "history_limit=1", "--set", "ifeval_limit=2",
    ]  # fmt: skip
    trained = runner.invoke(app, [*common, "--train-only", "--arm", "base"])
    assert trained.exit_code == 0, trained.output
    result = runner.invoke(app, [*common, "--eval-only"])
    assert result.exit_code == 0, result.output
    runs = tmp_path / "studies" / "pre" / "arms" / "base" / "eval"
    engine = "llamacpp" if importlib.util.find_spec("llama_cpp") else "local"  # the [llamacpp] extra, else transformers
    for kind in ("suites", "history", "ifeval"):
        manifest = json.loads((runs / kind / "manifest.json").read_text())
        assert manifest["model"] == f"{engine}:{(runs.parent / 'model').resolve()}"
        if engine == "llamacpp":  # one sequence at a time: more cases in flight would only queue
            assert manifest["config"]["jobs"] == 1
