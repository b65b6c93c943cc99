"""The study's plan (arms, presets, ``--set``) and its instruments: the goals are judged by fixed
rules on the numbers, shown what they must fail as well as what they must pass."""

from __future__ import annotations

import json

import pytest

from harnessctl.experiment.plan import (
    ARMS,
    PlanError,
    StudyPlan,
    apply_overrides,
    full_plan,
    plan_differences,
    plan_options,
    quick_plan,
)
from harnessctl.experiment.report import render_report
from harnessctl.experiment.results import judge_goals, markdown_table


def test_the_main_arms_chain_the_hat_stages_and_ablations_only_add_arms():
    names = [a.name for a in full_plan().arms()]
    assert names == ["base", "fixed-sft", "hsa-sft", "hsa-sft-opd", "hat"]
    assert [(a.stage, a.parent) for a in full_plan().arms()] == [
        ("base", None),
        ("sft", "base"),
        ("sft", "base"),
        ("distill", "hsa-sft"),
        ("rl", "hsa-sft-opd"),
    ]
    assert ARMS["fixed-sft"].data == "fixed" and ARMS["hsa-sft"].data == "hsa"
    with_ablations = full_plan(ablations=True).arms()
    assert [a.name for a in with_ablations][5:] == ["hsa-only-rl", "hsa-only-sft"]
    assert (ARMS["hsa-only-rl"].parent, ARMS["hsa-only-rl"].hsa) == ("fixed-sft", True)
    assert (ARMS["hsa-only-sft"].parent, ARMS["hsa-only-sft"].hsa) == ("hsa-sft", False)
    seen: set[str] = set()
    for arm in with_ablations:  # a parent always runs first
        assert arm.parent is None or arm.parent in seen
        seen.add(arm.name)


def test_quick_is_smaller_than_full_in_every_stage_and_in_evaluation():
    q, f = quick_plan(), full_plan()
    assert q.eval_limit < f.eval_limit and q.data_n < f.data_n
    # the full study scores IFEval on every prompt: the OPD goal compares pass rates points apart
    assert f.ifeval_limit == 0 and q.ifeval_limit > 0
    for stage in ("base", "sft", "distill", "rl"):
        assert q.stage_overrides[stage]["max_steps"] < f.stage_overrides[stage]["max_steps"]


def test_set_changes_plan_fields_and_stage_fields_and_names_what_is_wrong():
    plan = apply_overrides(quick_plan(), ["eval_limit=3", "ablations=true", "rl.max_steps=1", "sft.learning_rate=1e-4"])
    assert plan.eval_limit == 3 and plan.ablations is True
    assert plan.stage_overrides["rl"]["max_steps"] == "1" and plan.stage_overrides["sft"]["learning_rate"] == "1e-4"
    assert quick_plan().eval_limit != 3  # the preset itself is untouched
    with pytest.raises(PlanError, match="unknown plan field"):
        apply_overrides(quick_plan(), ["bogus=1"])
    with pytest.raises(PlanError, match="'train' is not a stage"):
        apply_overrides(quick_plan(), ["train.max_steps=1"])
    with pytest.raises(PlanError, match="eval_limit: expected a whole number"):
        apply_overrides(quick_plan(), ["eval_limit=many"])
    with pytest.raises(PlanError, match="sft.no_such_field: unknown sft field"):
        apply_overrides(quick_plan(), ["sft.no_such_field=1"])
    with pytest.raises(PlanError, match="distill.learning_rate: expected a number"):
        apply_overrides(quick_plan(), ["distill.learning_rate=fast"])
    with pytest.raises(PlanError, match="FIELD=VALUE"):
        apply_overrides(quick_plan(), ["eval_limit"])
    with pytest.raises(PlanError, match="data_n must be at least 1"):
        apply_overrides(quick_plan(), ["data_n=0"])
    with pytest.raises(PlanError, match="ifeval_limit must be 0 \\(every case\\) or positive"):
        apply_overrides(quick_plan(), ["ifeval_limit=-1"])
    assert plan_differences(quick_plan().to_dict(), full_plan().to_dict())


def _scores(**arms):
    return {name: dict(values) for name, values in arms.items()}


def test_goals_are_met_by_the_papers_pattern():
    scores = _scores(
        base={"livestream": 5, "variant": 5, "ifeval": 40},
        **{"fixed-sft": {"livestream": 80, "variant": 50, "ifeval": 30}},
        **{"hsa-sft": {"livestream": 80, "variant": 78, "ifeval": 30}},
        **{"hsa-sft-opd": {"livestream": 79, "variant": 77, "ifeval": 39.5, "tool_faults": 50}},
        hat={"livestream": 80, "variant": 78, "ifeval": 39, "tool_faults": 60},
    )
    goals = judge_goals(scores, {"p50_s": 0.5, "p95_s": 2.0, "where": "embedded server"})
    assert [g["status"] for g in goals] == ["met"] * 5
    assert "variant 50.0 vs livestream 80.0" in goals[0]["numbers"]
    assert "P95 2.00 s (embedded server)" in goals[4]["numbers"]


def test_goals_are_missed_by_a_model_that_shows_none_of_it():
    scores = _scores(
        base={"livestream": 5, "variant": 5, "ifeval": 40},
        **{"fixed-sft": {"livestream": 80, "variant": 70, "ifeval": 30}},  # holds under edits: no collapse
        **{"hsa-sft": {"livestream": 50, "variant": 49, "ifeval": 30}},  # follows edits but livestream < 60
        **{"hsa-sft-opd": {"livestream": 45, "variant": 49, "ifeval": 35, "tool_faults": 50}},  # lost livestream
        hat={"livestream": 40, "variant": 49, "ifeval": 35, "tool_faults": 70},  # robust but lost livestream
    )
    goals = judge_goals(scores, {"p50_s": 9.0, "p95_s": 15.0})
    assert [g["status"] for g in goals] == ["missed"] * 5


def test_goals_without_their_numbers_are_not_applicable_never_met():
    goals = judge_goals(
        {
            "base": {"ifeval": 10},
            "hsa-sft": {"ifeval": 20, "livestream": 1},
            "hsa-sft-opd": {"ifeval": 20, "livestream": 1},
        }
    )
    assert [g["status"] for g in goals] == ["n/a"] * 5
    assert "nothing to restore" in goals[2]["numbers"]


def _arm(name, label, scores):
    return {
        "name": name,
        "label": label,
        "stage": "sft",
        "status": "done",
        "metrics": {
            "scores": scores,
            "slices": {"history_v1": 10.0, "tool_faults": None},
            "families": {"op:tools": {"score": 3.0, "n": 1}},
            "latency": {"p50_s": 0.2, "p95_s": 0.4},
        },
        "compute": {"train_steps": 3, "train_s": 12.0, "eval_s": 4.0, "chain_train_s": 20.0},
        "curve": [{"step": 1.0, "loss": 3.0}, {"step": 2.0, "loss": 2.5}],
    }


def test_the_table_and_the_report_show_every_arm_beside_the_papers_numbers():
    results = {
        "id": "s1",
        "command": "harnessctl experiment hat --quick",
        "plan": {"preset": "quick"},
        "eval_cases": 2,
        "arms": [
            _arm("fixed-sft", "fixed-SFT", {"livestream": 61.25, "variant": 12.5}),
            _arm("hsa-sft", "HSA-SFT", {"livestream": 40.0}),
        ],
        "goals": judge_goals({"fixed-sft": {"livestream": 61.25, "variant": 12.5}}),
        "compute": {"train_s": 24, "eval_s": 8, "wall_s": 40},
    }
    md = markdown_table(results)
    assert "| fixed-SFT | 61.2 | 12.5 | 10.0 | — |" in md
    assert "| *paper: HAT* | 94.8 | 94.6 |" in md and "73.8" in md and "83.5" in md
    assert "**met** — fixed-SFT collapses on edits" in md
    assert "`harnessctl experiment hat --quick`" in md
    assert "Rubric components" not in md  # arms without component means: no empty table
    html = render_report(results)
    assert html.count("<svg") >= 4  # scores, learning curve, families, latency (and compute)
    assert "fixed-SFT" in html and "94.8" in html and "http" not in html.split("<body>")[1]


def test_a_distillation_arms_first_call_match_is_kept_as_a_curve_and_plotted():
    from harnessctl.experiment.runner import _curve

    log = [
        {"step": 0.0, "heldout_loss": 0.761, "heldout_call_match": 0.1846, "epoch": 0.0, "elapsed_s": 18.8},
        {"step": 5.0, "loss": 2.0, "grad_norm": 2.9, "learning_rate": 1e-5},
        {"step": 5.0, "heldout_loss": 0.7638, "heldout_call_match": 0.2},
    ]
    arm = _arm("hsa-sft-opd", "HSA-SFT + OPD", {"livestream": 11.25})
    arm["stage"], arm["curve"] = "distill", _curve(log)
    assert [p.get("heldout_call_match") for p in arm["curve"]] == [0.1846, None, 0.2]
    html = render_report({"id": "s1", "command": "c", "plan": {}, "eval_cases": 2, "arms": [arm], "goals": []})
    assert "<h3>distill: heldout_call_match</h3><svg" in html


def test_each_arm_trains_from_its_parent_on_its_own_data_and_logs_a_curve(tmp_path):
    from harnessctl.experiment.arms import stage_config

    plan = quick_plan(ablations=True)
    cfgs = {a.name: stage_config(plan, a, tmp_path) for a in plan.arms()}

    def model(arm):
        return str(tmp_path / "arms" / arm / "model")

    assert cfgs["base"].model == "" and cfgs["base"].out == model("base")  # stage 0 from scratch
    assert (cfgs["fixed-sft"].model, cfgs["fixed-sft"].data) == (model("base"), str(tmp_path / "data" / "fixed"))
    assert (cfgs["hsa-sft"].model, cfgs["hsa-sft"].data) == (model("base"), str(tmp_path / "data" / "hsa"))
    assert cfgs["fixed-sft"].max_steps == cfgs["hsa-sft"].max_steps == plan.stage_overrides["sft"]["max_steps"]
    assert (cfgs["hsa-sft-opd"].model, cfgs["hsa-sft-opd"].teacher) == (model("hsa-sft"), model("base"))
    assert (cfgs["hat"].model, cfgs["hat"].hsa) == (model("hsa-sft-opd"), True)
    assert (cfgs["hsa-only-rl"].model, cfgs["hsa-only-rl"].hsa) == (model("fixed-sft"), True)
    assert (cfgs["hsa-only-sft"].model, cfgs["hsa-only-sft"].hsa) == (model("hsa-sft"), False)
    assert all(c.eval_suites == "" and c.seed == plan.seed for c in cfgs.values())  # the study evaluates, once
    assert all(c.max_steps // c.logging_steps >= min(10, c.max_steps) for c in cfgs.values())


def _results(arms):
    """A full study's results.json content with these arms and no goals judged."""
    command, plan = "harnessctl experiment hat", {"preset": "full"}
    return {"id": "s1", "command": command, "plan": plan, "eval_cases": 2, "arms": arms, "goals": [], "compute": {}}


def test_the_table_shows_whether_each_arm_follows_the_harness_under_edits_component_by_component():
    fixed = _arm("fixed-sft", "fixed-SFT", {"livestream": 40.0, "variant": 20.0})
    fixed["metrics"]["components"] = {
        "livestream": {"skill_selection": 90.0, "tool_rationality": 70.0, "correctness": 50.0},
        "variant": {"skill_selection": 30.0, "tool_rationality": 25.0, "correctness": 45.0},
    }
    results = _results([fixed])
    md = markdown_table(results)
    assert "| fixed-SFT | 90.0 → 30.0 | 70.0 → 25.0 | 50.0 → 45.0 |" in md


def test_the_table_says_whether_stage_0_copies_and_says_nothing_for_a_study_that_did_not_probe():
    base = _arm("base", "base (stage 0)", {"livestream": 0.0})
    results = _results([base])
    assert "copy probe" not in markdown_table(results) and "copy probe" not in render_report(results)
    base["train_extra"] = {"copy_probe": {"echo": 0.983, "lookup": 0.117, "tool_argument": 0.267, "n": 60}}
    line = "60 prompts per kind): echo 98.3 %, lookup 11.7 %, tool argument 26.7 %."
    assert line in markdown_table(results) and line in render_report(results)


def test_a_continued_study_may_run_more_episodes_at_once_but_not_change_its_plan(tmp_path):
    from harnessctl.experiment.arms import StudyError
    from harnessctl.experiment.runner import open_study

    open_study(apply_overrides(full_plan(), ["sft.max_steps=600"]), tmp_path / "s")
    open_study(full_plan(eval_jobs=2), tmp_path / "s")  # the preset's 600 is the --set's "600"; -j may change
    with pytest.raises(StudyError, match="eval_limit"):
        open_study(apply_overrides(full_plan(), ["eval_limit=3"]), tmp_path / "s")
    # the served run's concurrency is part of what its latency means: not free
    with pytest.raises(StudyError, match="served_jobs"):
        open_study(apply_overrides(full_plan(), ["served_jobs=16"]), tmp_path / "s")


def test_the_presets_evaluate_16_episodes_at_once_in_process_and_measure_latency_served_at_8(tmp_path):
    import json

    from harnessctl.experiment.runner import open_study

    for preset in (full_plan, quick_plan):
        assert (preset().eval_jobs, preset().served_jobs) == (16, 8)
    # a study started before served_jobs was a field continues: it was served at 8 then too
    folder = tmp_path / "older"
    open_study(full_plan(), folder)
    plan = json.loads((folder / "plan.json").read_text())
    del plan["served_jobs"]
    plan["eval_jobs"] = 8
    (folder / "plan.json").write_text(json.dumps(plan))
    open_study(full_plan(), folder)


def test_a_refused_continuation_names_the_options_the_study_was_started_with(tmp_path):
    from harnessctl.experiment.arms import StudyError
    from harnessctl.experiment.runner import open_study

    open_study(apply_overrides(full_plan(), ["sft.max_steps=1600"]), tmp_path / "long")
    with pytest.raises(StudyError, match=r"started with \(--set sft\.max_steps=1600\)"):
        open_study(full_plan(), tmp_path / "long")  # the same --id, the --set forgotten
    open_study(full_plan(), tmp_path / "plain")
    with pytest.raises(StudyError, match="no options: the full preset"):
        open_study(full_plan(seed=1), tmp_path / "plain")


@pytest.mark.parametrize(
    ("preset", "seed", "ablations", "items"),
    [
        (full_plan, 0, False, []),
        (full_plan, 0, False, ["sft.max_steps=1600", "eval_limit=10"]),
        (quick_plan, 7, True, ["data_strength=0.7", "rl.learning_rate=3e-4", "base_model=out/m"]),
        (quick_plan, 0, False, ["sft.max_steps=40"]),  # the preset's own value: nothing to say
    ],
)
def test_the_options_named_for_a_plan_make_that_plan_again(preset, seed, ablations, items):
    plan = apply_overrides(preset(seed=seed, ablations=ablations), items).to_dict()
    options = plan_options(plan)
    # read the options back the way the command line does
    sets = [options[i + 1] for i, o in enumerate(options) if o == "--set"]
    again = (quick_plan if "--quick" in options else full_plan)(
        seed=int(options[options.index("--seed") + 1]) if "--seed" in options else 0,
        ablations="--ablations" in options,
    )
    assert plan_differences(plan, apply_overrides(again, sets).to_dict()) == []
    assert len(sets) == len([i for i in items if i != "sft.max_steps=40"])


def test_the_augmented_dataset_keeps_the_plans_canonical_share_of_cases_under_the_shipped_harness(tmp_path):
    from harnessctl.experiment.runner import build_datasets

    none_canonical = build_datasets(
        StudyPlan(data_n=12, data_variants=3, data_canonical_share=0.0, data_strength=0.8), tmp_path / "a", print
    )
    all_canonical = build_datasets(
        StudyPlan(data_n=12, data_variants=3, data_canonical_share=1.0), tmp_path / "b", print
    )
    assert none_canonical["hsa"]["train"] > 0 and none_canonical["hsa"]["canonical_train"] == 0
    assert all_canonical["hsa"]["canonical_train"] == all_canonical["hsa"]["train"] > 0
    # The fixed-harness dataset is the shipped harness whatever the shares say.
    assert none_canonical["fixed"]["canonical_train"] == none_canonical["fixed"]["train"]


def test_a_study_can_reword_its_training_messages_and_both_datasets_get_the_same_setting(tmp_path):
    from harnessctl.experiment.runner import build_datasets

    build_datasets(StudyPlan(data_n=12, data_variants=3, data_vary_wording=0.5), tmp_path, print)
    for name in ("fixed", "hsa"):
        spec = json.loads((tmp_path / "data" / name / "dataset.json").read_text())["spec"]
        assert spec["vary_wording"] == 0.5, name
    assert apply_overrides(full_plan(), ["data_vary_wording=0.5"]).data_vary_wording == 0.5
    with pytest.raises(PlanError, match="data_vary_wording must be within"):
        StudyPlan(data_vary_wording=2.0)


def test_a_study_can_add_its_viewers_phrasings_to_both_datasets_and_a_bad_file_stops_it_first(tmp_path):
    from harnessctl.experiment.runner import build_datasets
    from harnessctl.harness.errors import HarnessError

    phrasings = tmp_path / "viewers.yaml"
    phrasings.write_text("phrasings:\n  price:\n    - 'hw much rn for {this}'\n", encoding="utf-8")
    plan = apply_overrides(full_plan(), [f"data_phrasings={phrasings}", "data_n=12", "data_variants=3"])
    build_datasets(plan, tmp_path / "study", print)
    for name in ("fixed", "hsa"):
        spec = json.loads((tmp_path / "study" / "data" / name / "dataset.json").read_text())["spec"]
        assert spec["phrasings"] == {"price": ["hw much rn for {this}"]}, name
    phrasings.write_text("phrasings:\n  price:\n    - 'price of {order}'\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"viewers.yaml:3:7: price\[0\] \{order\} is not a placeholder of price"):
        build_datasets(plan, tmp_path / "other", print)
    assert not (tmp_path / "other" / "data").exists()


def test_a_study_can_have_both_datasets_quote_the_skill_they_load(tmp_path):
    from harnessctl.experiment.runner import build_datasets

    plan = apply_overrides(full_plan(), ["data_quote_skills=true", "data_n=12", "data_variants=3"])
    assert plan.data_quote_skills is True and full_plan().data_quote_skills is False
    root = tmp_path / "study"
    build_datasets(plan, root, lambda _line: None)
    for name in ("fixed", "hsa"):
        spec = json.loads((root / "data" / name / "dataset.json").read_text())["spec"]
        assert spec["quote_skills"] is True, name
        rows = [json.loads(x) for x in (root / "data" / name / "train.jsonl").read_text().splitlines()]
        assert any((m.get("content") or "").startswith("<think>") for r in rows for m in r["messages"]), name


def test_replan_changes_the_fields_of_stages_whose_arms_have_not_started_and_records_it(tmp_path):
    import json

    from harnessctl.experiment.arms import StudyError
    from harnessctl.experiment.runner import open_study

    folder = tmp_path / "s"
    open_study(apply_overrides(full_plan(), ["sft.max_steps=100"]), folder)
    (folder / "arms" / "hsa-sft").mkdir(parents=True)
    (folder / "arms" / "hsa-sft" / "train.log").write_text("step 1\n")
    later = apply_overrides(full_plan(), ["sft.max_steps=100", "distill.max_steps=20"])
    # without --replan a changed plan is refused, and the message says --replan would take it
    with pytest.raises(StudyError, match="--replan"):
        open_study(later, folder)
    open_study(later, folder, replan=True)  # no distill arm has started: taken
    assert json.loads((folder / "plan.json").read_text())["stage_overrides"]["distill"]["max_steps"] == "20"
    change = json.loads((folder / "plan-changes.jsonl").read_text().splitlines()[-1])
    assert change["stages"] == ["distill"] and "distill" in change["changes"][0]
    # an SFT arm has started: its stage's fields are fixed, --replan or not, and no hint is given
    with pytest.raises(StudyError, match="another plan") as refused:
        open_study(apply_overrides(later, ["sft.max_steps=200"]), folder, replan=True)
    assert "--replan" not in str(refused.value)
    # a plan field outside the stages (the data) is never replanned
    with pytest.raises(StudyError, match="data_n"):
        open_study(apply_overrides(later, ["data_n=50"]), folder, replan=True)
