"""Arms with a trained parent train side by side: fixed-SFT and HSA-SFT at once, one process
each, each arm's lines in its own log; an arm that fails is named with its log, and the same
study then continues without retraining what finished."""

from __future__ import annotations

import json

import pytest

from harnessctl.experiment.arms import StudyError, trained
from harnessctl.experiment.plan import ARMS, apply_overrides, quick_plan
from harnessctl.experiment.runner import run_study
from harnessctl.experiment.side_by_side import TRAIN_LOG, last_step, train_side_by_side


def tiny_plan(base_model: str):
    return apply_overrides(
        quick_plan(),
        [
            f"base_model={base_model}",
            "data_n=6",
            "data_variants=2",
            "base.max_steps=1",
            "base.rows=24",
            "base.per_device_batch_size=2",
            "base.copy_probe=0",
            "sft.max_steps=2",
            "sft.per_device_batch_size=2",
            "sft.logging_steps=1",
        ],
    )


@pytest.mark.slow
def test_the_two_sft_arms_train_side_by_side_each_with_its_own_log(tiny_model_path, tmp_path):
    said: list[str] = []
    done = run_study(
        tiny_plan(str(tiny_model_path)),
        tmp_path / "s",
        say=said.append,
        progress=False,
        train_only=True,
        only_arms=["base", "fixed-sft", "hsa-sft"],
        train_jobs=2,
    )
    assert done["trained"] == ["base", "fixed-sft", "hsa-sft"]
    assert any("training fixed-sft and hsa-sft side by side" in line for line in said)
    for name, data in (("fixed-sft", "fixed"), ("hsa-sft", "hsa")):
        arm = tmp_path / "s" / "arms" / name
        manifest = json.loads((arm / "model" / "train.json").read_text())
        assert manifest["steps"] == 2 and manifest["data"].endswith(f"data/{data}/train.jsonl")
        assert manifest["parent"] == str(tmp_path / "s" / "arms" / "base" / "model")
        assert json.loads((arm / "train.json").read_text())["steps"] == 2
        assert last_step(arm / TRAIN_LOG) == (2, 2)  # the trainer's lines, one per logged step
    assert not (tmp_path / "s" / "arms" / "base" / TRAIN_LOG).exists()  # an arm alone trains in process


@pytest.mark.slow
def test_an_arm_that_fails_beside_another_is_named_with_its_log(tiny_model_path, tmp_path):
    plan = tiny_plan(str(tiny_model_path))
    root = tmp_path / "s"
    run_study(plan, root, progress=False, train_only=True, only_arms=["base"])
    (root / "data" / "hsa" / "train.jsonl").write_text("not json\n")
    with pytest.raises(StudyError) as failed:
        train_side_by_side(plan, [ARMS["fixed-sft"], ARMS["hsa-sft"]], root, lambda _m: None, False)
    message = str(failed.value)
    assert message.startswith("arm hsa-sft (sft): ") and f"hsa-sft/{TRAIN_LOG}" in message
    assert "fixed-sft" not in message.split("(its log")[0]
    # the arm that did not fail finished, and a rerun trains only the other one
    assert trained(root, ARMS["fixed-sft"]) and not trained(root, ARMS["hsa-sft"])
