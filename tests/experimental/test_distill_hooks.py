"""The wing's distillation hooks through the core's stage 2: held-out agent rows and the
``stop_near_teacher`` rule (:mod:`harnessctl.experimental.heldout`), and two teachers in one run
(:mod:`harnessctl.experimental.two_teachers`), reached by the ``distill`` config's fields."""

from __future__ import annotations

import json

import pytest

from tests.trainer.test_stages import loads_and_answers


@pytest.mark.slow
def test_distill_scores_held_out_agent_rows_and_stops_once_back_near_its_teacher(
    sft_run, tiny_model_path, trajectories_dir, tmp_path
):
    from trainer.distill import train_distill
    from trainer.stage_configs import load_config

    _, sft = sft_run
    common = {
        "prompts": str(trajectories_dir / "train.jsonl"),
        "prompt_turn": "any",
        "n_prompts": 8,
        "per_device_batch_size": 4,
        "max_completion_length": 8,
        "eval_suites": "",
        "heldout": str(trajectories_dir),
        "heldout_rows": 4,
        "heldout_steps": 1,
        "logging_steps": 1,
        "save_steps": 100,
    }
    # the untrained base distilled toward the SFT model: far from its teacher, so it runs every step
    far = {"model": str(tiny_model_path), "teacher": sft.out, "max_steps": 2, "stop_near_teacher": 0.05}
    result = train_distill(
        load_config("distill", "tiny-cpu", {**common, **far, "out": str(tmp_path / "far")}), progress=False
    )
    curve = [(row["step"], row["heldout_loss"]) for row in result.log if "heldout_loss" in row]
    assert [step for step, _ in curve] == [0, 1, 2]
    assert [row["step"] for row in result.log if "loss" in row] == [1, 2]  # the stage's own loss still logged
    manifest = json.loads((tmp_path / "far" / "train.json").read_text())
    teacher_loss = manifest["heldout_teacher_loss"]
    assert manifest["heldout_rows"] == 4 and manifest["heldout_stop_at"] == round(teacher_loss * 1.05, 4)
    assert curve[0][1] > manifest["heldout_stop_at"]  # the base does not know the agent rows
    assert result.steps == 2 and result.extra["stopped_near_teacher_at"] is None

    # the SFT model toward itself: back within 50 % after its first step, so it stops there; its
    # first calls are checked too, against the teacher's
    near = {"model": sft.out, "teacher": sft.out, "max_steps": 4, "stop_near_teacher": 0.5, "heldout_calls": True}
    result = train_distill(
        load_config("distill", "tiny-cpu", {**common, **near, "out": str(tmp_path / "near")}), progress=False
    )
    assert result.steps == 1 and result.extra["stopped_near_teacher_at"] == 1
    assert result.extra["heldout_loss"] <= result.extra["heldout_stop_at"]
    calls = [row["heldout_call_match"] for row in result.log if "heldout_call_match" in row]
    assert len(calls) == 2 and all(0.0 <= c <= 1.0 for c in calls)
    assert 0.0 <= result.extra["heldout_teacher_call_match"] <= 1.0
    loads_and_answers(tmp_path / "near")

    with pytest.raises(Exception, match="stop_near_teacher needs heldout rows"):
        load_config("distill", "tiny-cpu", {"stop_near_teacher": "0.05"})


def test_two_teacher_distillation_sends_each_prompt_to_its_own_teacher(
    sft_run, tiny_model_path, trajectories_dir, tmp_path
):
    import copy

    import torch
    from datasets import Dataset
    from trl import DistillationConfig

    from harnessctl.experimental.two_teachers import make_two_teacher_trainer
    from trainer.common import load_model, training_arguments
    from trainer.distill import DistillPrompt, prompt_rows, read_prompts, train_distill
    from trainer.general_corpus import general_prompts
    from trainer.stage_configs import load_config

    cfg, sft = sft_run
    dcfg = load_config(
        "distill", "tiny-cpu", {"out": str(tmp_path / "unit"), "max_steps": 1, "per_device_batch_size": 4}
    )
    student, tok = load_model(sft.out, dcfg)
    base, _ = load_model(str(tiny_model_path), dcfg)
    twin = copy.deepcopy(student)  # the anchor teacher: the student itself, so its divergence is 0
    tok.padding_side = "left"
    agent = read_prompts(trajectories_dir / "train.jsonl", 4, turn="any", seed=0)
    general = [DistillPrompt([{"role": "user", "content": p}]) for p in general_prompts(4, seed=0)]
    rows = prompt_rows(general + agent, tok)
    for i, row in enumerate(rows):
        row["teacher"] = int(i >= 4)
    args = DistillationConfig(**training_arguments(dcfg), max_completion_length=8, temperature=1.0)
    trainer = make_two_teacher_trainer(
        model=student,
        teacher_model=base,
        anchor_teacher=twin,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
    )

    def loss_of(batch):
        with torch.no_grad():
            inputs = trainer._generate_and_score_completions(batch)
            return float(trainer._compute_loss(student, inputs, None)[0])

    to_twin, to_base = loss_of(rows[4:]), loss_of(rows[:4])
    assert to_twin == pytest.approx(0.0, abs=1e-4) and to_base > 0.05
    assert 0.0 < loss_of(rows[2:6]) < to_base  # half the rows to each: between the two
    assert trainer.teacher_model is trainer.teachers[0]  # the general teacher is back after each step

    # through the stage: half of 8 prompts from the agent rows toward the SFT model, the rest
    # toward the base
    result = train_distill(
        load_config(
            "distill",
            "tiny-cpu",
            {
                "model": sft.out,
                "teacher": str(tiny_model_path),
                "anchor_teacher": sft.out,
                "anchor_prompts": str(trajectories_dir / "train.jsonl"),
                "prompt_turn": "any",
                "n_prompts": 8,
                "max_steps": 2,
                "per_device_batch_size": 4,
                "max_completion_length": 8,
                "eval_suites": "",
                "out": str(tmp_path / "two"),
            },
        ),
        progress=False,
    )
    manifest = json.loads((tmp_path / "two" / "train.json").read_text())
    assert result.steps == 2 and result.extra["prompts"] == 8
    assert (manifest["teacher"], manifest["anchor_teacher"], manifest["anchor_prompts"]) == (
        str(tiny_model_path),
        sft.out,
        4,
    )
    loads_and_answers(tmp_path / "two")
    with pytest.raises(Exception, match="anchor_teacher and anchor_prompts go together"):
        load_config("distill", "tiny-cpu", {"anchor_teacher": sft.out})


def test_a_held_out_call_matches_only_the_same_tool_and_the_same_skill(trajectories_dir):
    from harnessctl.experimental.heldout import call_turns, first_call
    from trainer.data import read_chat_rows

    row = read_chat_rows(trajectories_dir, "validation")[0]
    turns = call_turns(row)
    assert turns and all(before[-1]["role"] in ("user", "tool") for before, _ in turns)
    tool, skill = next(want for _, want in turns if want[1] is not None)  # a skill load
    said = '<tool_call>{"name": "%s", "arguments": {"name": "%s"}}</tool_call>'
    assert first_call(said % (tool, skill)) == (tool, skill)
    assert first_call(said % (tool, "another_skill")) != (tool, skill)
    assert first_call("Hi there, no tool today.") is None
