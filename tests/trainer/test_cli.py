"""``harnessctl train`` end to end on real files, ``accelerate launch -m trainer.STAGE`` in one CPU
process, and bad input answered with one clear message and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}


def test_train_sft_prints_a_json_summary_and_evaluates_the_result(tiny_model_path, trajectories_dir, tmp_path):
    out = tmp_path / "sft"
    cmd = [
        sys.executable,
        "-m",
        "harnessctl.cli.main",
        "train",
        "sft",
        "--model",
        f"local:{tiny_model_path}",
        "--data",
        str(trajectories_dir),
        "--out",
        str(out),
        "--config",
        "tiny-cpu",
        "--max-steps",
        "2",
        "--set",
        "per_device_batch_size=2",
        "--set",
        "save_steps=100",
        "--eval",
        "livestream",
        "--eval-limit",
        "2",
        "--json",
    ]
    res = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    assert summary["stage"] == "sft" and summary["steps"] == 2 and summary["out"] == str(out)
    assert summary["tokens_per_s"] > 0 and summary["metrics"]["train_loss"] > 0
    assert summary["hardware"]["device"] == "cpu" and summary["hardware"]["precision"] in ("bf16", "fp32")
    assert 0.0 <= summary["eval"]["scores"]["livestream"] <= 100.0
    assert (out / "train.json").is_file() and (out / "config.json").is_file()


def test_accelerate_launch_runs_a_stage_module_in_one_cpu_process(tiny_model_path, tmp_path):
    out = tmp_path / "rl"
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--num_processes",
        "1",
        "--cpu",
        "-m",
        "trainer.rl",
        "--config",
        "tiny-cpu",
        "--model",
        str(tiny_model_path),
        "--out",
        str(out),
        "--max-steps",
        "1",
        "--cases",
        "4",
        "--num-generations",
        "2",
        "--per-device-batch-size",
        "2",
        "--max-turn-tokens",
        "16",
        "--save-steps",
        "100",
        "--json",
    ]
    res = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["stage"] == "rl" and summary["steps"] == 1
    assert summary["extra"]["episodes"] == 2 and 0 < summary["extra"]["generation_share"] < 1
    # how many prompt groups taught nothing (every episode the same reward): a share, from TRL's log
    assert 0.0 <= summary["extra"]["groups_without_signal"] <= 1.0
    assert json.loads((out / "train.json").read_text())["stage"] == "rl"


def write_rows(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path.parent


GOOD = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "tools": "[]"}


@pytest.mark.parametrize(
    "rows, message",
    [
        ([GOOD, {"tools": "[]"}], "train.jsonl:2: no 'messages' column"),
        ([{"messages": GOOD["messages"]}], "train.jsonl:1: no 'tools' column"),
        ([GOOD, "{not json"], "train.jsonl:2: not valid JSON"),
        ([{"messages": [{"role": "user", "content": "hi"}], "tools": []}], "no assistant turn"),
        ([{"messages": GOOD["messages"], "tools": "not json"}], "'tools' is a string but not JSON"),
    ],
)
def test_a_bad_dataset_names_the_file_line_and_column(tiny_model_path, tmp_path, rows, message):
    data = write_rows(tmp_path / "data" / "train.jsonl", rows)
    res = runner.invoke(
        app, ["train", "sft", "--model", str(tiny_model_path), "--data", str(data), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["sft", "--model", "{readme}", "--data", "{data}"], "not a folder"),
        (["sft", "--model", "{tmp}", "--data", "{data}"], "not a checkpoint (missing config.json"),
        (["sft", "--model", "{model}", "--data", "{tmp}/none"], "no such folder; build one with `harnessctl augment"),
        (["distill", "--model", "{model}", "--teacher", "{tmp}"], "--teacher"),
        (["sft", "--model", "{model}", "--data", "{data}", "--set", "warmup=3"], "--set warmup: unknown sft field"),
        (["sft", "--model", "{model}", "--data", "{data}", "--set", "max_steps=two"], "max_steps: expected a number"),
        (["rl", "--model", "{model}", "--set", "num_generations=1"], "num_generations must be at least 2"),
        (["sft", "--model", "{model}", "--data", "{data}", "--config", "nope"], "nope: no such config file"),
        (["distill", "--model", "{model}", "--teacher", "{model}", "--set", "heldout={tmp}/none"], "heldout"),
        (["distill", "--model", "{model}", "--teacher", "{model}", "--set", "anchor_teacher={model}"], "go together"),
        (
            ["distill", "--model", "{model}", "--teacher", "{model}", "--set", "anchor_teacher=shipped:nope"],
            "shipped:nope: no such shipped model",
        ),
        (
            ["distill", "--model", "{model}", "--teacher", "{model}", "--set", "anchor_teacher=shipped:hat"]
            + ["--set", "anchor_prompts={tmp}/none.jsonl"],
            "anchor_prompts",
        ),
    ],
)
def test_bad_options_are_one_clear_message_and_exit_2(tiny_model_path, trajectories_dir, tmp_path, args, message):
    values = {
        "readme": str(REPO / "README.md"),
        "tmp": str(tmp_path),
        "model": str(tiny_model_path),
        "data": str(trajectories_dir),
    }
    argv = ["train", *[a.format(**values) for a in args], "--out", str(tmp_path / "o")]
    res = runner.invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output


def test_the_summary_names_the_machine_a_time_was_measured_on(monkeypatch, tmp_path):
    import trainer.stages
    from trainer.common import TrainResult

    def finished(stage, cfg, **kwargs):
        hardware = {"device": "cpu", "processor": "Example CPU 9000", "threads": 2, "precision": "fp32"}
        return TrainResult(
            stage=stage, out=cfg.out, steps=3, seconds=1.0, tokens=10, tokens_per_s=10.0, hardware=hardware
        )

    monkeypatch.setattr(trainer.stages, "run_stage", finished)
    res = runner.invoke(app, ["train", "base", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "cpu (Example CPU 9000), 2 threads, fp32" in " ".join(res.output.split())


def test_an_interrupted_run_exits_130_and_says_how_to_resume(monkeypatch, tmp_path):
    import trainer.stages
    from trainer.common import TrainResult

    def interrupted(stage, cfg, **kwargs):
        return TrainResult(
            stage=stage,
            out=cfg.out,
            steps=3,
            seconds=1.0,
            tokens=10,
            tokens_per_s=10.0,
            interrupted=True,
            checkpoint=f"{cfg.out}/checkpoint-3",
        )

    monkeypatch.setattr(trainer.stages, "run_stage", interrupted)
    res = runner.invoke(app, ["train", "base", "--out", str(tmp_path / "b"), "--json"])
    assert res.exit_code == 130 and "--resume" in res.output and "checkpoint-3" in res.output


def test_the_command_line_loads_no_training_library_until_a_stage_runs():
    code = (
        "import sys, json, harnessctl.cli.main, trainer.stage_configs, trainer.cli, trainer.stages;"
        "print(json.dumps(sorted(m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules)))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env(), capture_output=True, text=True, check=True)
    assert json.loads(res.stdout) == []
    res = runner.invoke(app, ["train", "--help"])
    assert res.exit_code == 0 and all(stage in res.output for stage in ("base", "sft", "distill", "rl"))
