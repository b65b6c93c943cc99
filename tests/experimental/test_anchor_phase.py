"""The wing's anchor phase of the OPD arm: with an ``anchor`` stage in the plan, the arm distills to the base
on general prompts, then goes on from that model back toward its SFT parent on prompts cut at
every step of the parent's own trajectories; HAT starts from the second phase's model."""

from __future__ import annotations

import json

import pytest

from harnessctl.experiment.arms import GENERAL_DIR, StudyError, phase_config, stage_config
from harnessctl.experiment.plan import ARMS, PlanError, apply_overrides, full_plan, quick_plan
from harnessctl.experiment.runner import run_study
from harnessctl.experimental.phases import ANCHOR


def anchor_phase_config(plan, arm, root):
    return phase_config(plan, arm, root, ANCHOR)


def anchor_phase(plan) -> bool:
    return plan.second_phase("distill") is ANCHOR


def test_the_anchor_phase_is_the_full_presets_and_its_fields_are_checked(tmp_path):
    assert anchor_phase(full_plan()) and not anchor_phase(quick_plan())  # the full preset's: up to 60 steps
    assert anchor_phase(apply_overrides(quick_plan(), ["anchor.max_steps=20"]))
    assert not anchor_phase(apply_overrides(full_plan(), ["anchor.max_steps=0"]))
    with pytest.raises(PlanError, match="anchor.nope: unknown anchor field"):
        apply_overrides(full_plan(), ["anchor.nope=1"])
    with pytest.raises(StudyError, match=r"arm hsa-sft-opd \(anchor phase\): prompt_turn must be"):
        anchor_phase_config(apply_overrides(full_plan(), ["anchor.prompt_turn=last"]), ARMS["hsa-sft-opd"], tmp_path)


def test_the_anchor_phase_distills_back_toward_the_sft_parent_on_its_own_trajectories(tmp_path):
    plan = apply_overrides(full_plan(), ["distill.learning_rate=3e-5"])
    cfg = anchor_phase_config(plan, ARMS["hsa-sft-opd"], tmp_path)
    arm = tmp_path / "arms" / "hsa-sft-opd"
    assert (cfg.model, cfg.out) == (str(arm / GENERAL_DIR), str(arm / "model"))
    assert cfg.teacher == str(tmp_path / "arms" / "hsa-sft" / "model")
    assert cfg.prompts == str(tmp_path / "data" / "hsa" / "train.jsonl") and cfg.prompt_turn == "any"
    assert (cfg.max_steps, cfg.n_prompts) == (60, 240)  # its own size, not the first phase's
    assert cfg.learning_rate == 3e-5  # distill's other fields carry over
    # sized on the parent's held-out rows: it stops once their loss is within 5 % of the parent's
    assert cfg.heldout == str(tmp_path / "data" / "hsa") and cfg.stop_near_teacher == 0.05
    # the first phase distills to the base as before, scoring the same rows without stopping on
    # them; HAT starts from the second phase's model
    first = stage_config(plan, ARMS["hsa-sft-opd"], tmp_path)
    assert first.teacher == str(tmp_path / "arms" / "base" / "model")
    assert first.heldout == cfg.heldout and first.stop_near_teacher == 0
    assert stage_config(plan, ARMS["hat"], tmp_path).model == cfg.out
    # a plan's own heldout wins over the arm's default
    assert (
        stage_config(apply_overrides(plan, ["distill.heldout=rows.jsonl"]), ARMS["hsa-sft-opd"], tmp_path).heldout
        == "rows.jsonl"
    )


@pytest.mark.slow
def test_the_opd_arm_trains_both_phases_and_records_them_as_one(tiny_model_path, tmp_path):
    plan = apply_overrides(
        quick_plan(),
        [
            f"base_model={tiny_model_path}",
            "data_n=6",
            "data_variants=2",
            "base.max_steps=1",
            "base.rows=24",
            "base.per_device_batch_size=2",
            "base.copy_probe=0",
            "sft.max_steps=1",
            "sft.per_device_batch_size=2",
            "distill.max_steps=1",
            "distill.n_prompts=4",
            "distill.per_device_batch_size=2",
            "distill.max_completion_length=8",
            "anchor.max_steps=2",
            "anchor.n_prompts=4",
        ],
    )
    said: list[str] = []
    done = run_study(
        plan,
        tmp_path / "s",
        say=said.append,
        progress=False,
        train_only=True,
        only_arms=["base", "hsa-sft", "hsa-sft-opd"],
    )
    assert done["trained"] == ["base", "hsa-sft", "hsa-sft-opd"]
    arm = tmp_path / "s" / "arms" / "hsa-sft-opd"
    first = json.loads((arm / GENERAL_DIR / "train.json").read_text())
    second = json.loads((arm / "model" / "train.json").read_text())
    assert first["teacher"] == str(tmp_path / "s" / "arms" / "base" / "model")
    assert second["teacher"] == str(tmp_path / "s" / "arms" / "hsa-sft" / "model")
    assert second["parent"] == str(arm / GENERAL_DIR) and second["data"].endswith("data/hsa/train.jsonl")
    record = json.loads((arm / "train.json").read_text())
    assert record["steps"] == 3 and [p["phase"] for p in record["phases"]] == ["general", "anchor"]
    # both phases scored the HSA-SFT parent's held-out rows; the curve has them after each phase
    assert all(p["heldout_loss"] > 0 and p["heldout_teacher_loss"] > 0 for p in record["phases"])
    assert [row["step"] for row in record["log"] if "heldout_loss" in row] == [0, 1, 1, 3]
    assert any("anchor phase" in line for line in said)


def test_a_study_started_before_the_preset_had_an_anchor_phase_continues_with_anchor_steps_0():
    from harnessctl.experiment.plan import plan_options
    from harnessctl.experiment.ship import reproduce_command

    before = full_plan().to_dict()
    del before["stage_overrides"]["anchor"]  # plan.json of a study from before the anchor phase
    assert plan_options(before) == ["--set", "anchor.max_steps=0"]
    assert reproduce_command(before, "copyphase") == "harnessctl experiment hat --id copyphase --set anchor.max_steps=0"


def test_a_study_started_before_the_anchor_phase_stopped_on_held_out_rows_continues_with_its_steps():
    from harnessctl.experiment.plan import plan_differences, plan_options

    before = full_plan().to_dict()
    before["stage_overrides"]["anchor"] = {"max_steps": 20}  # plan.json of the study shipped before
    options = plan_options(before)
    assert options == ["--set", "anchor.max_steps=20", "--set", "anchor.stop_near_teacher=0"]
    again = apply_overrides(full_plan(), [options[1], options[3]]).to_dict()
    assert plan_differences(before, again) == []
    assert plan_differences(before, full_plan().to_dict())  # the preset today is another plan
