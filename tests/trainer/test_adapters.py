"""Stages on a pretrained base train LoRA adapters: the checkpoint is the adapter plus train.json
naming its base by fingerprint; every loader applies it to that base and refuses another."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.models.bases import base_fingerprint

runner = CliRunner()

SMALL_STEPS = [
    "--set", "lora_r=4",
    "--set", "lora_layers=1",
    "--set", "max_steps=2",
    "--set", "per_device_batch_size=2",
    "--set", "save_steps=2",
    "--set", "heldout_rows=0",
    "--set", "learning_rate=1e-2",
]  # fmt: skip


@pytest.fixture(scope="module")
def adapter(tmp_path_factory, small_base, trajectories_dir) -> Path:
    """``harnessctl train sft`` on the small base: an adapter on its top layer."""
    out = tmp_path_factory.mktemp("adapter") / "sft"
    result = runner.invoke(
        app,
        [
            "train",
            "sft",
            "--data",
            str(trajectories_dir),
            "--out",
            str(out),
            "--set",
            f"base={small_base}",
            *SMALL_STEPS,
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def test_sft_on_a_base_writes_the_adapter_alone_in_bf16_with_its_base_fingerprinted(adapter, small_base):
    from safetensors import safe_open

    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert not (adapter / "model.safetensors").exists() and not (adapter / "README.md").exists()
    manifest = json.loads((adapter / "train.json").read_text())
    assert manifest["stage"] == "sft"
    assert manifest["base"] == {
        "name": str(small_base),
        "path": str(small_base),
        "fingerprint": base_fingerprint(small_base),
    }
    with safe_open(str(adapter / "adapter_model.safetensors"), "pt") as f:
        keys = list(f.keys())
        assert keys and all(f.get_tensor(k).dtype.is_floating_point for k in keys)
        assert {str(f.get_tensor(k).dtype) for k in keys} == {"torch.bfloat16"}
    # LoRA only where asked: layer 1, never layer 0
    assert all(".layers.1." in k for k in keys)
    assert json.loads((adapter / "adapter_config.json").read_text())["layers_to_transform"] == [1]


def test_the_adapter_changes_what_the_base_computes(adapter, small_base):
    import torch
    from transformers import AutoModelForCausalLM

    from harnessctl.models.adapters import load_adapter_model

    tuned, tokenizer = load_adapter_model(adapter, dtype=torch.float32)
    plain = AutoModelForCausalLM.from_pretrained(small_base).eval()
    ids = tokenizer("stock check pls: rose", return_tensors="pt").input_ids
    with torch.no_grad():
        assert not torch.allclose(tuned(ids).logits, plain(ids).logits, atol=1e-4)


def test_local_adapter_and_its_merged_folder_write_the_same_greedy_reply(adapter, tmp_path):
    from harnessctl.models import GenerationSettings
    from harnessctl.models.local import LocalModel

    merged = tmp_path / "merged"
    result = runner.invoke(app, ["model", "merge", str(adapter), "--out", str(merged)])
    assert result.exit_code == 0, result.output
    assert (merged / "model.safetensors").is_file() and json.loads((merged / "train.json").read_text())["merged"]
    chat = [{"role": "system", "content": "You are Mia."}, {"role": "user", "content": "price of the lip tint?"}]
    settings = GenerationSettings(max_tokens=12)
    a = LocalModel(f"local:{adapter}").generate(chat, [], settings)
    b = LocalModel(f"local:{merged}").generate(chat, [], settings)
    assert a.completion_token_ids == b.completion_token_ids and len(a.completion_token_ids) > 0


def test_an_adapter_refuses_a_base_whose_weights_differ_and_says_what_to_do(adapter, small_base, tmp_path):
    from harnessctl.models.base import ModelError
    from harnessctl.models.local import LocalModel

    moved = tmp_path / "adapter"
    shutil.copytree(adapter, moved)
    other = tmp_path / "other-base"
    shutil.copytree(small_base, other)
    (other / "BASE.json").unlink()
    config = json.loads((other / "config.json").read_text())
    config["rms_norm_eps"] = 1e-3  # another function of the same shapes
    (other / "config.json").write_text(json.dumps(config))
    manifest = json.loads((moved / "train.json").read_text())
    manifest["base"]["name"] = manifest["base"]["path"] = str(other)
    (moved / "train.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match=r"trained on base .* with fingerprint sha256:.*retrain the adapter"):
        LocalModel(f"local:{moved}")
    result = runner.invoke(app, ["eval", "--suite", "livestream", "--limit", "1", "--model", f"local:{moved}"])
    assert result.exit_code == 2 and "fingerprint" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_distill_continues_the_adapter_with_its_base_as_the_teacher(adapter, small_base, tmp_path):
    out = tmp_path / "opd"
    result = runner.invoke(
        app,
        [
            "train", "distill", "--model", str(adapter), "--out", str(out),
            "--set", "max_steps=1", "--set", "n_prompts=4", "--set", "per_device_batch_size=2",
            "--set", "max_completion_length=8", "--set", "lora_r=4",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "train.json").read_text())
    assert manifest["teacher"] == str(small_base)
    assert manifest["base"]["fingerprint"] == base_fingerprint(small_base)
    assert (out / "adapter_model.safetensors").is_file() and not (out / "model.safetensors").exists()


def test_the_embedded_server_answers_for_the_adapter_what_it_writes_in_process(adapter, livecommerce_path):
    from harnessctl.harness import load_harness, render_harness
    from harnessctl.models import GenerationSettings
    from harnessctl.models.litellm_backend import LiteLLMModel
    from harnessctl.models.local import LocalModel
    from harnessctl.models.server import serve_in_background

    rendered = render_harness(load_harness(livecommerce_path, validate=False))
    chat = [{"role": "system", "content": rendered.system_prompt}, {"role": "user", "content": "stock check: rose"}]
    settings = GenerationSettings(max_tokens=16)
    model = LocalModel(f"local:{adapter}")
    direct = model.generate(chat, rendered.tools, settings)
    url, stop = serve_in_background(model, model_name="sft")
    try:
        served = LiteLLMModel("openai/sft", api_base=url).generate(chat, rendered.tools, settings)
    finally:
        stop()
    assert (served.content, served.tool_calls) == (direct.content, direct.tool_calls)
    assert served.completion_tokens == direct.completion_tokens > 0
