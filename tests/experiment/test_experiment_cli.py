"""``harnessctl experiment hat --quick`` end to end through the real CLI, with a test-only plan
override (a few steps per stage, one case per suite): every arm trains and is evaluated, a study
killed after its first arm resumes without retraining it, and the outputs hold what the issue asks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessctl.experiment.results import arm_metrics

REPO = Path(__file__).resolve().parents[2]


def env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "NO_COLOR": "1",
    }


def tiny_study(base_model: Path) -> list[str]:
    """The smallest study that still runs every stage for real: a step or two each, one case per suite."""
    sets = {
        "base_model": str(base_model),
        "data_n": 6,
        "data_variants": 2,
        "eval_limit": 1,
        "history_limit": 2,
        "ifeval_limit": 3,
        "eval_max_tokens": 12,
        "base.max_steps": 1,
        "base.rows": 24,
        "base.per_device_batch_size": 2,
        "sft.max_steps": 1,
        "sft.per_device_batch_size": 2,
        "distill.max_steps": 1,
        "distill.n_prompts": 4,
        "distill.per_device_batch_size": 2,
        "distill.max_completion_length": 8,
        "rl.max_steps": 1,
        "rl.cases": 2,
        "rl.num_generations": 2,
        "rl.per_device_batch_size": 2,
        "rl.max_turn_tokens": 12,
        "rl.max_completion_length": 48,
        "base.copy_probe": 2,
        **{f"{stage}.logging_steps": 1 for stage in ("base", "sft", "distill", "rl")},
    }
    return [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "harnessctl.cli.main", "experiment", "hat", *args]


@pytest.mark.slow
def test_a_quick_study_killed_after_its_first_arm_resumes_without_retraining_it_and_trains_and_evaluates_apart(
    tiny_model_path, tmp_path
):
    out = tmp_path / "experiments"
    cmd = cli("--quick", "--id", "mini", "--out", str(out), *tiny_study(tiny_model_path))
    base_done = out / "mini" / "arms" / "base" / "arm.json"

    log = tmp_path / "first.log"
    with open(log, "w") as stderr:
        first = subprocess.Popen(
            cmd, cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
        deadline = time.monotonic() + 300
        while not base_done.is_file() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        still_running = first.poll() is None
        if still_running:
            os.killpg(first.pid, signal.SIGKILL)  # dies mid-study, somewhere in the next arm
        first.wait()
    assert base_done.is_file(), log.read_text()[-3000:]
    assert still_running and first.returncode == -signal.SIGKILL
    base_record = base_done.read_bytes()
    base_model = (out / "mini" / "arms" / "base" / "model" / "model.safetensors").stat().st_mtime_ns

    # --eval-only trains nothing: the arms whose training has not finished wait
    waiting = subprocess.run(
        [*cmd, "--eval-only"], check=False, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600
    )
    assert waiting.returncode == 0, waiting.stderr[-3000:]
    assert "not evaluated yet: fixed-sft, hsa-sft, hsa-sft-opd, hat" in waiting.stdout
    assert ": train " not in waiting.stderr and not (out / "mini" / "results.json").exists()

    # --train-only --arm trains just the arms named (the killed one continues); an arm whose
    # parent is not trained is refused before anything runs
    orphan = subprocess.run(
        [*cmd, "--train-only", "--arm", "hat"], check=False, cwd=REPO, env=env(), capture_output=True, text=True
    )
    assert orphan.returncode == 2 and "parent arm hsa-sft-opd is not trained yet" in orphan.stderr
    picked = subprocess.run(
        [*cmd, "--train-only", "--arm", "hsa-sft", "--arm=fixed-sft", "--train-jobs", "2"],
        check=False,
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert picked.returncode == 0, picked.stderr[-3000:]
    assert "trained: fixed-sft, hsa-sft" in picked.stdout
    assert "training fixed-sft and hsa-sft side by side" in picked.stderr  # --train-jobs 2: one process each
    assert not (out / "mini" / "arms" / "hsa-sft-opd" / "model").exists()

    # --train-only trains every arm left and evaluates none of them
    trained = subprocess.run(
        [*cmd, "--train-only"], check=False, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "trained: hsa-sft-opd, hat" in trained.stdout
    assert "evaluate" not in trained.stderr
    for name in ("fixed-sft", "hsa-sft", "hsa-sft-opd", "hat"):
        assert (out / "mini" / "arms" / name / "model" / "train.json").is_file()
        assert not (out / "mini" / "arms" / name / "eval").exists()
        assert not (out / "mini" / "arms" / name / "arm.json").exists()
    assert not (out / "mini" / "results.json").exists()

    # --eval-only --arm evaluates just the arm named; the others wait
    one = subprocess.run(
        [*cmd, "--eval-only", "--arm", "hsa-sft"], check=False, cwd=REPO, env=env(), capture_output=True, text=True
    )
    assert one.returncode == 0, one.stderr[-3000:]
    assert "not evaluated yet: fixed-sft, hsa-sft-opd, hat" in one.stdout
    assert (out / "mini" / "arms" / "hsa-sft" / "arm.json").is_file()
    assert not (out / "mini" / "arms" / "fixed-sft" / "arm.json").exists()

    # --eval-only now evaluates every trained arm and writes the results
    second = subprocess.run(
        [*cmd, "--eval-only", "--json"], check=False, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "arm base: finished before" in second.stderr
    assert ": train " not in second.stderr  # neither the finished arm nor the trained ones were retrained ...
    assert base_done.read_bytes() == base_record  # ... nor rewritten
    assert (out / "mini" / "arms" / "base" / "model" / "model.safetensors").stat().st_mtime_ns == base_model

    results = json.loads(second.stdout)
    # how to reproduce it: the options that only split the work are not part of it
    assert "--quick" in results["command"] and "only" not in results["command"] and "--arm" not in results["command"]
    assert results["compute"]["data_s"] > 0  # built by the first run, remembered by the later ones
    # the machine the times were measured on, with the arms it trained (all of them here)
    [machine] = results["compute"]["hardware"]
    assert machine["arms"] == ["base", "fixed-sft", "hsa-sft", "hsa-sft-opd", "hat"] and machine["device"] == "cpu"
    study = out / "mini"
    assert [a["name"] for a in results["arms"]] == ["base", "fixed-sft", "hsa-sft", "hsa-sft-opd", "hat"]
    for arm in results["arms"]:
        assert arm["status"] == "done"
        assert (study / "arms" / arm["name"] / "model" / "train.json").is_file()
        manifest = json.loads((study / "arms" / arm["name"] / "model" / "train.json").read_text())
        assert manifest["stage"] == arm["stage"]
        if arm["parent"]:  # each arm trained from its parent arm's checkpoint
            assert manifest["parent"] == str(study / "arms" / arm["parent"] / "model")
        assert arm["compute"]["train_steps"] == 1 and arm["compute"]["train_s"] > 0
        # the real history and IFEval each on a sample of their own
        assert arm["metrics"]["n"] == {"livestream": 1, "variant": 1, "robustness": 1, "ifeval": 3, "history": 2}
        assert set(arm["metrics"]["history"]) == {"history:v1", "history:v2"}
        assert "ifeval" not in arm_metrics(study / "arms" / arm["name"] / "eval" / "suites")["n"]
        assert set(arm["metrics"]["scores"]) == {"livestream", "variant", "robustness", "ifeval"}
        # each score with the 95 % interval of its sample, IFEval's from its own run
        for key, (low, high) in ((k, arm["metrics"]["intervals"][k]) for k in ("livestream", "ifeval", "history_v1")):
            score = arm["metrics"]["scores"].get(key, arm["metrics"]["slices"].get(key))
            assert low <= score <= high, (arm["name"], key)
        # the rubric's components per agent suite
        assert {"livestream", "variant", "robustness"} <= set(arm["metrics"]["components"])
        assert "skill_selection" in arm["metrics"]["components"]["variant"]
        assert arm["metrics"]["latency"]["p95_s"] > 0
        assert arm["curve"], "a learning curve from the trainer's log"
    by_name = {a["name"]: a for a in results["arms"]}
    assert json.loads((study / "arms" / "fixed-sft" / "model" / "train.json").read_text())["data"] == str(
        study / "data" / "fixed" / "train.jsonl"
    )
    assert json.loads((study / "arms" / "hsa-sft" / "model" / "train.json").read_text())["data"] == str(
        study / "data" / "hsa" / "train.jsonl"
    )
    assert json.loads((study / "arms" / "hat" / "model" / "train.json").read_text())["hsa"] is True
    assert by_name["hat"]["metrics"]["served_latency"]["n"] == 1  # the final model answered through the embedded server
    assert [g["status"] in ("met", "missed", "n/a") for g in results["goals"]] == [True] * 5
    assert results["goals"][4]["numbers"].endswith("(embedded server, livestream, 8 episodes in flight)")

    md = (study / "results.md").read_text()
    assert (
        "IFEval on 3 prompts" in md
        and "P50/P95: seconds per episode in process, 16 episodes in flight." in md
        and "| fixed-SFT |" in md
        and "| HAT (+ HSA-RL) |" in md
        and "94.8" in md
        and "73.8" in md
        and f"trained on cpu ({machine['processor']}), {machine['threads']} threads, {machine['precision']}" in md
    )
    html = (study / "report.html").read_text()
    assert "95 % bootstrap intervals" in md and 'class="whisker"' in html
    # whether stage 0 copies, measured after it trained (2 prompts per kind here)
    assert "Stage 0 copy probe" in md and "2 prompts per kind" in md and "Stage 0 copy probe" in html
    assert "<svg" in html and "Learning curves" in html and "Variant suite by family" in html
    # how far each arm leans on the shipped names under a renamed listing (one variant case each here)
    assert all(a["metrics"]["stale_names"]["episodes"] == 1 for a in results["arms"])
    assert "Stale names on the variant suite" in html and "old name (calls)" in md
    assert json.loads((study / "results.json").read_text())["scores"] == results["scores"]

    # a finished arm whose IFEval run is missing (a study from before it had one) gets it, trains nothing
    shutil.rmtree(study / "arms" / "hat" / "eval" / "ifeval")
    third = subprocess.run(
        [*cmd, "--json"], check=False, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600
    )
    assert third.returncode == 0, third.stderr[-3000:]
    assert "arm hat: evaluate on ifeval, 3 prompts" in third.stderr and ": train " not in third.stderr
    assert "arm hsa-sft: evaluate" not in third.stderr
    assert {a["name"]: a["metrics"]["n"]["ifeval"] for a in json.loads(third.stdout)["arms"]}["hat"] == 3

    # the same study asked with another plan is refused, naming the plan file and the difference
    other = subprocess.run(
        [*cmd[:-2], "--set", "eval_limit=2"],
        check=False,
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 2
    assert "plan.json" in other.stderr and "eval_limit" in other.stderr and "Traceback" not in other.stderr
    assert "continue it with the options it was started with (--quick --set base_model=" in other.stderr


@pytest.mark.slow
def test_estimate_times_every_phase_and_evaluation_run_here_projects_the_plan_and_writes_no_study(
    tiny_model_path, tmp_path
):
    # a plan with both second phases (copy, anchor), as the full preset has
    phases = ["--set", "copy.max_steps=50", "--set", "anchor.max_steps=20", "--set", "anchor.n_prompts=4"]
    cmd = cli("--quick", *tiny_study(tiny_model_path), *phases, "--out", str(tmp_path / "studies"), "--estimate")
    res = subprocess.run([*cmd, "--json"], cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    estimate = json.loads(res.stdout)
    rows = [(p["arm"], p["phase"], p["planned_steps"]) for p in estimate["phases"]]
    assert rows == [
        ("base", "general", 1),
        ("base", "copy", 50),
        ("fixed-sft", "general", 1),
        ("hsa-sft", "general", 1),
        ("hsa-sft-opd", "general", 1),
        ("hsa-sft-opd", "anchor", 20),
        ("hat", "general", 1),
    ]
    # each phase timed for real, a few steps, on this machine
    assert all(p["probe_steps"] == 3 and p["seconds_per_step"] > 0 for p in estimate["phases"])
    # only the OPD arm scores held-out rows (its SFT parent's), and that time is counted
    scoring = {(p["arm"], p["phase"]) for p in estimate["phases"] if p["heldout_s"] > 0}
    assert scoring == {("hsa-sft-opd", "general"), ("hsa-sft-opd", "anchor")}
    # every evaluation run of the plan, at its own sizes: eval_limit 1 in three agent suites,
    # history 2, IFEval 3 prompts, for five arms; the final arm's livestream through the server
    runs = {e["kind"]: (e["planned_cases"], e["arms"]) for e in estimate["evaluation"]}
    assert runs == {"suites": (3, 5), "history": (2, 5), "ifeval": (3, 5), "served": (1, 1)}
    assert all(e["seconds_per_case"] > 0 for e in estimate["evaluation"])
    assert estimate["eval_timed_on"] == "shipped:hat"  # a trained model of the plan's size
    assert estimate["train_s"] == pytest.approx(
        estimate["data_s"] + sum(p["projected_s"] for p in estimate["phases"]), abs=1
    )
    assert estimate["total_s"] == pytest.approx(estimate["train_s"] + estimate["eval_s"], abs=1)
    assert estimate["fits_budget"] is True and estimate["hardware"]["device"] == "cpu"
    assert not (tmp_path / "studies").exists()  # nothing of a study is written: the probe ran in a scratch folder


def test_estimate_says_when_the_plan_is_over_the_90_minute_budget_and_on_what_machine(monkeypatch):
    from typer.testing import CliRunner

    import harnessctl.experiment.estimate as estimate
    from harnessctl.cli.main import app

    cpu = {"device": "cpu", "processor": "Example CPU", "threads": 2, "precision": "fp32"}
    slow = estimate.StudyEstimate(
        [
            estimate.PhaseEstimate("base", "copy", 2500, 3, 1.1),
            estimate.PhaseEstimate("fixed-sft", "general", 600, 3, 4.2),
            estimate.PhaseEstimate("hsa-sft", "general", 600, 3, 4.2),
            estimate.PhaseEstimate("hsa-sft-opd", "anchor", 60, 3, 2.0, heldout_s=70.0),
        ],
        data_s=40.0,
        probe_s=120.0,
        hardware=cpu,
        evaluation=[estimate.EvalEstimate("ifeval", 1000, 5, 64, 0.12)],
        eval_timed_on="shipped:hat",
    )
    monkeypatch.setattr(estimate, "estimate_study", lambda plan, **kw: slow)
    res = CliRunner().invoke(app, ["experiment", "hat", "--estimate"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    # 2,750 + 2 x 2,520 + 120 + 70 + 40 s of training (8,020), 600 s of evaluation
    assert "training about 2 h 14 min, evaluation about 10 min: the study about 2 h 24 min, over the 90" in text
    assert "cpu (Example CPU), 2 threads, fp32" in text and "2500" in text
    assert "evaluation, timed on shipped:hat" in text and "70 s" in text


def test_the_estimate_times_evaluation_on_the_shipped_hat_only_where_it_is_the_plans_size(
    tiny_model_path, tmp_path, monkeypatch
):
    import harnessctl.models.registry as registry
    from harnessctl.experiment.estimate import eval_model

    own = tmp_path / "probe" / "arms" / "hat" / "model"
    shutil.copytree(tiny_model_path, own)
    assert eval_model(tmp_path / "probe") == (registry.SHIPPED_DATA_DIR / "hat", "shipped:hat")

    bigger = tmp_path / "shipped" / "hat"
    shutil.copytree(registry.SHIPPED_DATA_DIR / "hat", bigger)
    config = json.loads((bigger / "config.json").read_text())
    (bigger / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 24}))
    monkeypatch.setattr(registry, "SHIPPED_DATA_DIR", tmp_path / "shipped")
    model, what = eval_model(tmp_path / "probe")
    assert model == own and "shipped:hat is not the size of this plan's model" in what

    monkeypatch.setattr(registry, "SHIPPED_DATA_DIR", tmp_path / "nothing-shipped")
    model, what = eval_model(tmp_path / "probe")
    assert model == own and "no shipped:hat checkpoint in the package" in what


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "bogus=1"], "unknown plan field"),
        (["--set", "sft.no_such_field=1"], "sft.no_such_field: unknown sft field"),
        (["--set", "rl.max_steps=lots"], "rl.max_steps: expected a number"),
        (["--set", "eval_limit=lots"], "expected a whole number"),
        (["--id", "../up"], "--id"),
        (["--arm", "base"], "--train-only trains or --eval-only evaluates"),
        (["--train-only", "--arm", "nope"], "not an arm of this study"),
        (["--eval-only", "--arm", "nope"], "not an arm of this study"),
        (["--estimate", "--train-only"], "--estimate trains nothing"),
        # found before the first arm trains, not at its first evaluation
        (["--set", "evals_dir=no-suites-here"], "no-suites-here/livestream.jsonl: suite file missing"),
        (["--estimate", "--set", "evals_dir=no-suites-here"], "suite file missing"),
        (["--set", "base_model=local:no-model-here"], "base_model local:no-model-here: no such folder"),
    ],
)
def test_bad_input_is_one_clear_message_and_exit_2(tmp_path, args, message):
    from typer.testing import CliRunner

    from harnessctl.cli.main import app

    res = CliRunner().invoke(app, ["experiment", "hat", "--quick", "--out", str(tmp_path), *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    # nothing is written: the same command, corrected, starts the study afresh
    assert not any(tmp_path.rglob("plan.json"))


def test_a_broken_harness_is_named_before_the_study_folder_is_written(tmp_path):
    from typer.testing import CliRunner

    from harnessctl.cli.main import app

    harness = tmp_path / "harness"
    shutil.copytree(REPO / "harnesses" / "livecommerce", harness)
    with (harness / "harness.yaml").open("a", encoding="utf-8") as f:
        f.write("  - broken: [\n")
    out = tmp_path / "studies"
    res = CliRunner().invoke(app, ["experiment", "hat", "--quick", "--out", str(out), "--set", f"harness={harness}"])
    assert res.exit_code == 2, res.output
    assert "harness.yaml:" in res.output and "invalid YAML" in res.output and "Traceback" not in res.output
    # no plan.json: the command with the harness corrected starts afresh instead of being refused as another plan
    assert not any(out.rglob("plan.json"))


def test_the_study_table_fits_80_columns_without_cutting_an_arm_or_a_number(monkeypatch):
    from rich.console import Console

    import harnessctl.cli.experiment_cmds as experiment_cmds

    console = Console(width=80, record=True, highlight=False, soft_wrap=True)
    monkeypatch.setattr(experiment_cmds, "out", console)
    results = json.loads((REPO / "docs" / "studies" / "hat-long-1600.json").read_text())
    experiment_cmds._print(results, Path("experiments/long"))
    table = console.export_text().split("   met ")[0].splitlines()
    assert max(len(line) for line in table) <= 80 and "…" not in "\n".join(table)
    rows = {line.split()[0]: line.split()[1:] for line in table[4:] if line and not line.startswith("paper")}
    assert list(rows) == ["base", "fixed-sft", "hsa-sft", "hsa-sft-opd", "hat"]  # two share "hsa-sft"
    assert rows["fixed-sft"][:3] == ["25.3", "8.4", "25.8"]
