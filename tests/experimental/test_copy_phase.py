"""The wing's copy phase of stage 0: with a ``copy`` stage in the plan, the base arm trains on the general
corpus, then goes on from that model on copy rows at a steady learning rate, and the SFT arms start
from the second phase's model. A stopped study continues the phase it was in."""

from __future__ import annotations

import json

import pytest

from harnessctl.experiment.arms import GENERAL_DIR, StudyError, phase_config, stage_config, train_arm
from harnessctl.experiment.plan import ARMS, PlanError, apply_overrides, full_plan, quick_plan
from harnessctl.experimental.phases import COPY


def copy_phase_config(plan, root):
    return phase_config(plan, ARMS["base"], root, COPY)


def copy_phase(plan) -> bool:
    return plan.second_phase("base") is COPY


def small_plan(base_model: str, *extra: str):
    return apply_overrides(
        quick_plan(),
        [
            f"base_model={base_model}",
            "base.max_steps=1",
            "base.rows=24",
            "base.per_device_batch_size=2",
            "copy.max_steps=2",
            "copy.copy_probe=1",
            *extra,
        ],
    )


def test_the_copy_phase_is_set_like_a_stage_and_a_wrong_field_or_value_is_named(tmp_path):
    plan = apply_overrides(quick_plan(), ["copy.max_steps=2200"])
    assert copy_phase(plan) and not copy_phase(quick_plan())
    # the full preset has one (2,500 steps); 0 steps turns it off
    assert copy_phase(full_plan()) and copy_phase_config(full_plan(), tmp_path).max_steps == 2500
    assert not copy_phase(apply_overrides(full_plan(), ["copy.max_steps=0"]))
    with pytest.raises(PlanError, match="copy.nope: unknown copy field"):
        apply_overrides(quick_plan(), ["copy.nope=1"])
    with pytest.raises(StudyError, match=r"arm base \(copy phase\): copy_share must be within"):
        copy_phase_config(apply_overrides(quick_plan(), ["copy.copy_share=2"]), tmp_path)


def test_the_copy_phase_keeps_base_settings_but_its_size_and_defaults_to_half_copy_rows_at_a_steady_rate(tmp_path):
    plan = small_plan("m", "copy.lr_scheduler_type=cosine")
    cfg = copy_phase_config(plan, tmp_path)
    assert cfg.model == str(tmp_path / "arms" / "base" / GENERAL_DIR) and cfg.out == str(
        tmp_path / "arms" / "base" / "model"
    )
    assert (cfg.max_steps, cfg.per_device_batch_size, cfg.rows) == (2, 2, 10)  # one pass, at least 10 rows
    assert cfg.copy_share == 0.5 and cfg.copy_probe == 1
    assert cfg.lr_scheduler_type == "cosine"  # the plan's copy fields win over the defaults
    default = copy_phase_config(small_plan("m", "copy.max_steps=40"), tmp_path)
    assert (default.lr_scheduler_type, default.rows) == ("constant_with_warmup", 80)
    # the SFT arms start from the base arm's model: the copy phase's
    assert stage_config(plan, ARMS["fixed-sft"], tmp_path).model == cfg.out


@pytest.mark.slow
def test_a_base_with_a_copy_phase_trains_both_phases_records_them_as_one_and_continues_where_it_stopped(
    tiny_model_path, tmp_path
):
    plan = small_plan(str(tiny_model_path))
    said: list[str] = []
    record = train_arm(plan, ARMS["base"], tmp_path, said.append, False)
    base = tmp_path / "arms" / "base"

    general = json.loads((base / GENERAL_DIR / "train.json").read_text())
    copied = json.loads((base / "model" / "train.json").read_text())
    assert general["parent"] == str(tiny_model_path) and "copy_probe" not in general
    assert copied["parent"] == str(base / GENERAL_DIR) and "50% copying rows" in copied["data"]
    assert copied["config"]["lr_scheduler_type"] == "constant_with_warmup"
    # the copy phase's short rows train padding-free; the general phase's are padded
    assert copied["config"]["padding_free"] is True and general["config"]["padding_free"] is False
    assert set(copied["copy_probe"]) == {"echo", "lookup", "tool_argument", "pick", "n"}

    assert record["steps"] == 3 and [p["phase"] for p in record["phases"]] == ["general", "copy"]
    assert [row["step"] for row in record["log"] if "loss" in row] == [1, 2, 3]
    assert record["extra"]["copy_probe"] == copied["copy_probe"]
    assert json.loads((base / "train.json").read_text()) == record
    assert any("copy phase" in line for line in said)

    # stopped after the first phase: only the copy phase trains again
    first_phase = (base / GENERAL_DIR / "model.safetensors").stat().st_mtime_ns
    (base / "train.json").unlink()
    for path in sorted((base / "model").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    said.clear()
    again = train_arm(plan, ARMS["base"], tmp_path, said.append, False)
    assert (base / GENERAL_DIR / "model.safetensors").stat().st_mtime_ns == first_phase
    assert [line for line in said if "train base" in line] == [] and again["steps"] == 3


def test_a_study_started_before_the_preset_had_a_copy_phase_continues_with_copy_steps_0(tmp_path):
    from harnessctl.experiment.arms import StudyError as Refused
    from harnessctl.experiment.plan import full_plan, plan_options
    from harnessctl.experiment.runner import open_study
    from harnessctl.experiment.ship import reproduce_command

    before = full_plan().to_dict()
    del before["stage_overrides"]["copy"]  # plan.json as a study of the preset before it wrote it
    root = tmp_path / "long"
    root.mkdir()
    (root / "plan.json").write_text(json.dumps(before))
    with pytest.raises(Refused, match=r"continue it with the options it was started with \(--set copy.max_steps=0\)"):
        open_study(full_plan(), root)
    open_study(apply_overrides(full_plan(), ["copy.max_steps=0"]), root)
    assert plan_options(before) == ["--set", "copy.max_steps=0"]
    assert reproduce_command(before, "long") == "harnessctl experiment hat --id long --set copy.max_steps=0"
