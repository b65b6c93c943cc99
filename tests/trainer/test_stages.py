"""Each stage runs a few steps on the tiny model; its checkpoint changed, carries its manifest,
reloads as ``local:PATH``, serves, evaluates, and resumes after an interruption."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.trainer.conftest import weights_differ


def loads_and_answers(folder: Path) -> None:
    from harnessctl.models.base import GenerationSettings
    from harnessctl.models.local import LocalModel

    reply = LocalModel(f"local:{folder}").generate(
        [{"role": "user", "content": "hi"}], [], GenerationSettings(max_tokens=4)
    )
    assert 1 <= len(reply.completion_token_ids) <= 4


def test_sft_changes_the_weights_and_writes_a_manifest_beside_every_checkpoint(
    sft_run, tiny_model_path, trajectories_dir
):
    cfg, result = sft_run
    out = Path(result.out)
    assert result.steps == 4 and not result.interrupted and result.tokens > 0 and result.tokens_per_s > 0
    assert weights_differ(out, tiny_model_path) > 0
    assert result.extra["rows_dropped"] == 0 and result.extra["max_length"] >= result.extra["longest_row"]
    for folder in (out, out / "checkpoint-2", out / "checkpoint-4"):
        manifest = json.loads((folder / "train.json").read_text())
        assert manifest["stage"] == "sft" and manifest["parent"] == str(tiny_model_path)
        assert len(manifest["data_hash"]) == 64 and manifest["config"]["data"] == str(trajectories_dir)
        assert {"torch", "transformers", "trl"} <= set(manifest["packages"])
        # where it ran, so a step time can be compared with another machine's: the precision resolved
        assert manifest["hardware"]["device"] == "cpu" and manifest["hardware"]["threads"] >= 1
        assert manifest["hardware"]["precision"] in ("bf16", "fp32") and manifest["hardware"]["processor"]
    losses = [row["loss"] for row in result.log if "loss" in row]
    assert len(losses) == 4 and all(loss > 0 for loss in losses)
    # each logged step says when it was logged: a step's time without the first step's warm-up
    elapsed = [row["elapsed_s"] for row in result.log if "loss" in row]
    assert elapsed == sorted(elapsed) and 0 < elapsed[-1] <= result.seconds
    # the dataset's held-out rows are scored at every checkpoint: memorisation shows as a gap
    heldout = [(row["step"], row["eval_loss"]) for row in result.log if "eval_loss" in row]
    assert [step for step, _ in heldout] == [2.0, 4.0] and all(loss > 0 for _, loss in heldout)
    assert result.extra["heldout_rows"] == 4 and result.metrics["eval_loss"] == pytest.approx(heldout[-1][1], abs=1e-5)


def test_the_sft_checkpoint_loads_as_local_serves_and_evaluates(sft_run, livecommerce):
    from harnessctl.eval.runner import EvalConfig, run_eval
    from harnessctl.models.base import GenerationSettings
    from harnessctl.models.local import LocalModel
    from harnessctl.models.server import serve_in_background
    from trainer.common import evaluate

    cfg, result = sft_run
    model = LocalModel(f"local:{result.out}")
    reply = model.generate([{"role": "user", "content": "hi"}], [], GenerationSettings(max_tokens=8))
    assert 1 <= len(reply.completion_token_ids) <= 8
    scores = evaluate(result.out, cfg, suites="livestream", limit=2)
    assert 0.0 <= scores["scores"]["livestream"] <= 100.0 and Path(scores["run"]).is_dir()
    url, stop = serve_in_background(model, model_name="sft")
    try:
        outcome = run_eval(
            EvalConfig(
                suites=["livestream"],
                model="openai/sft",
                api_base=url,
                limit=2,
                jobs=1,
                cache=False,
                runs_dir=str(Path(result.out) / "served-runs"),
                max_tokens=16,
            )
        )
    finally:
        stop()
    summary = outcome.summary["suites"]["livestream"]
    assert summary["n"] == 2 and summary.get("errors", 0) == 0


def test_ctrl_c_saves_a_checkpoint_and_resume_finishes_the_run(
    tiny_model_path, trajectories_dir, tmp_path, monkeypatch
):
    from transformers import TrainerCallback

    import trainer.common as common
    from trainer.sft import train_sft
    from trainer.stage_configs import load_config

    class PressCtrlC(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 1:
                os.kill(os.getpid(), signal.SIGINT)  # as a terminal would, mid-step

    original = common._callbacks
    monkeypatch.setattr(common, "_callbacks", lambda *a, **k: original(*a, **k) + [PressCtrlC()])
    overrides = {
        "model": str(tiny_model_path),
        "data": str(trajectories_dir),
        "out": str(tmp_path / "m"),
        "max_steps": 3,
        "per_device_batch_size": 2,
        "save_steps": 100,
        "logging_steps": 1,
    }
    first = train_sft(load_config("sft", "tiny-cpu", overrides), progress=False)
    assert first.interrupted and first.steps == 2 and first.checkpoint.endswith("checkpoint-2")
    assert (Path(first.checkpoint) / "train.json").is_file() and not (tmp_path / "m" / "model.safetensors").exists()
    monkeypatch.setattr(common, "_callbacks", original)
    from trainer.common import TrainError

    with pytest.raises(TrainError, match="--resume"):
        train_sft(load_config("sft", "tiny-cpu", overrides), progress=False)
    second = train_sft(load_config("sft", "tiny-cpu", overrides), resume=True, progress=False)
    assert not second.interrupted and second.steps == 3 and second.resumed_from.endswith("checkpoint-2")
    assert (tmp_path / "m" / "model.safetensors").is_file()
    # the compute and the curve cover both invocations, not just the one that finished
    before = json.loads((Path(first.checkpoint) / "train.json").read_text())["seconds"]
    assert 0 < before <= first.seconds
    assert second.total_seconds == pytest.approx(before + second.seconds, abs=1e-3)
    assert json.loads((tmp_path / "m" / "train.json").read_text())["seconds"] == second.total_seconds
    assert [row["step"] for row in second.log if "loss" in row] == [1.0, 2.0, 3.0]


def test_base_builds_the_tiny_model_and_trains_it_on_the_general_corpus(tmp_path, capsys):
    from trainer.base import train_base
    from trainer.stage_configs import load_config

    cfg = load_config(
        "base",
        "tiny-cpu",
        {
            "out": str(tmp_path / "base"),
            "rows": 40,
            "max_steps": 2,
            "per_device_batch_size": 4,
            "logging_steps": 1,
            "save_steps": 100,
            "copy_probe": 2,
        },
    )
    result = train_base(cfg)
    assert result.steps == 2 and result.extra["rows"] == 40
    # stderr is not a terminal here (as in a log file): progress is one plain line per logged step
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("train base step")]
    assert [line.split()[3] for line in lines] == ["1/2", "2/2"] and all(" loss " in line for line in lines)
    assert weights_differ(tmp_path / "base", tmp_path / "base" / "init") > 0
    manifest = json.loads((tmp_path / "base" / "train.json").read_text())
    assert manifest["stage"] == "base" and manifest["parent"].endswith("init")
    # whether the base copies a fresh code off the conversation, recorded beside the model
    probe = manifest["copy_probe"]
    assert probe == result.extra["copy_probe"] and probe["n"] == 2
    assert set(probe) == {"echo", "lookup", "tool_argument", "pick", "n"} and all(
        0 <= probe[k] <= 1 for k in probe if k != "n"
    )
    loads_and_answers(tmp_path / "base")


def test_distill_learns_from_a_teacher_with_the_same_vocabulary_and_refuses_another(sft_run, tiny_model_path, tmp_path):
    import shutil

    from trainer.common import TrainError
    from trainer.distill import train_distill
    from trainer.stage_configs import load_config

    _, sft = sft_run
    base = {
        "model": sft.out,
        "teacher": str(tiny_model_path),
        "n_prompts": 16,
        "max_steps": 2,
        "per_device_batch_size": 4,
        "max_completion_length": 16,
        "eval_suites": "",
        "logging_steps": 1,
        "save_steps": 100,
    }
    result = train_distill(load_config("distill", "tiny-cpu", {**base, "out": str(tmp_path / "d")}), progress=False)
    assert result.steps == 2 and weights_differ(tmp_path / "d", Path(sft.out)) > 0
    assert json.loads((tmp_path / "d" / "train.json").read_text())["teacher"] == str(tiny_model_path)
    loads_and_answers(tmp_path / "d")

    other = tmp_path / "other-teacher"
    shutil.copytree(tiny_model_path, other)
    tok = json.loads((other / "tokenizer.json").read_text())
    tok["model"]["vocab"]["zzqx_new_token"] = len(tok["model"]["vocab"]) + 100
    (other / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(TrainError, match="another vocabulary"):
        train_distill(load_config("distill", "tiny-cpu", {**base, "teacher": str(other), "out": str(tmp_path / "e")}))


def test_distill_on_agent_trajectories_prompts_every_step_with_its_own_tools(sft_run, trajectories_dir, tmp_path):
    from transformers import AutoTokenizer

    from trainer.distill import prompt_rows, read_prompts, train_distill
    from trainer.stage_configs import load_config

    cfg, sft = sft_run
    rows = trajectories_dir / "train.jsonl"
    prompts = read_prompts(rows, 30, turn="any", seed=1)
    assert all(p.tools and p.messages[-1]["role"] in ("user", "tool") for p in prompts)
    assert any(m["role"] == "assistant" for p in prompts for m in p.messages)  # later steps, after tool results
    assert read_prompts(rows, 30, turn="any", seed=1) == prompts  # seeded
    first = read_prompts(rows, 30)
    assert all(p.messages[-1]["role"] == "user" for p in first) and all(p.tools for p in first)
    # each prompt rendered with the tools of its own row: the listings differ between variants
    text = prompt_rows(prompts, AutoTokenizer.from_pretrained(sft.out))
    names = {p.tools[0]["function"]["name"] for p in prompts}
    assert all(isinstance(r["prompt"], str) and r["prompt"].rstrip().endswith("assistant") for r in text)
    assert all(any(name in r["prompt"] for name in names) for r in text)

    # the SFT model distilled toward itself on its own trajectories' steps
    result = train_distill(
        load_config(
            "distill",
            "tiny-cpu",
            {
                "model": sft.out,
                "teacher": sft.out,
                "prompts": str(rows),
                "prompt_turn": "any",
                "n_prompts": 8,
                "max_steps": 1,
                "per_device_batch_size": 4,
                "max_completion_length": 8,
                "eval_suites": "",
                "out": str(tmp_path / "anchored"),
            },
        ),
        progress=False,
    )
    assert result.steps == 1 and result.extra["prompts"] == 8
    with pytest.raises(Exception, match="prompt_turn must be first or any"):
        load_config("distill", "tiny-cpu", {"prompt_turn": "last"})


def test_lora_trains_adapters_and_saves_them_merged_into_a_plain_checkpoint(
    tiny_model_path, trajectories_dir, tmp_path
):
    from trainer.sft import train_sft
    from trainer.stage_configs import load_config

    cfg = load_config(
        "sft",
        "tiny-cpu",
        {
            "model": str(tiny_model_path),
            "data": str(trajectories_dir),
            "out": str(tmp_path / "lora"),
            "max_steps": 2,
            "per_device_batch_size": 2,
            "save_steps": 100,
            "lora_r": 4,
            "lora_alpha": 8,
            "learning_rate": 1e-2,
        },
    )
    result = train_sft(cfg, progress=False)
    out = Path(result.out)
    assert not (out / "adapter_config.json").exists() and (out / "model.safetensors").is_file()
    assert weights_differ(out, tiny_model_path) > 0
    assert json.loads((out / "train.json").read_text())["config"]["lora_r"] == 4
    loads_and_answers(out)
