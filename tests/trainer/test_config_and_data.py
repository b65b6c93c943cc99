"""Configs, datasets and the general corpus: fast checks that need no training."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from trainer.config import CONFIG_DIR, STAGES, ConfigError
from trainer.data import decision_cuts, join_viewer_rows, plan_lengths, read_chat_rows, token_lengths, training_chats
from trainer.general_corpus import TOPICS, general_prompts, general_rows
from trainer.rl_config import RLStageConfig
from trainer.sft_config import SFTStageConfig
from trainer.stage_configs import field_help, load_config

REPO = Path(__file__).resolve().parents[2]


def test_a_config_layers_defaults_then_file_then_stage_section_then_overrides(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(
        "learning_rate: 0.01\nmax_steps: 7\nsft:\n  max_steps: 9\n  packing: true\nrl:\n  num_generations: 8\n"
    )
    sft = load_config("sft", f, {"max_steps": "11"})
    assert (sft.learning_rate, sft.max_steps, sft.packing, sft.seed) == (0.01, 11, True, 0)
    rl = load_config("rl", f, {"reward_weights": '{"correctness": 1.0}', "hsa": "false", "per_device_batch_size": "8"})
    assert (
        rl.max_steps == 7 and rl.num_generations == 8 and rl.reward_weights == {"correctness": 1.0} and rl.hsa is False
    )


@pytest.mark.parametrize("name", sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
def test_every_shipped_config_loads_for_every_stage(name):
    for stage in STAGES:
        assert load_config(stage, name, {"out": "o"}).stage == stage


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: SFTStageConfig(max_steps=0), "max_steps must be at least 1"),
        (lambda: SFTStageConfig(precision="fp8"), "precision must be auto, bf16, fp16 or fp32"),
        (lambda: SFTStageConfig(eval_suites="livestream,nope"), "unknown suite 'nope'"),
        (lambda: RLStageConfig(per_device_batch_size=6, num_generations=4), "set per_device_batch_size=8"),
        (lambda: RLStageConfig(reward_weights={"charm": 1.0}), "unknown component 'charm'"),
        (lambda: load_config("sft", None, {"max_steps": "2.5"}), "expected a whole number"),
        (lambda: load_config("sft", None, {"packing": "maybe"}), "expected true or false"),
        (lambda: SFTStageConfig(viewers_per_row=0), "viewers_per_row must be 1 or more"),
        (lambda: SFTStageConfig(decision_rows=8.5), "decision_rows must be within"),
        (lambda: SFTStageConfig(decision_viewers=-1), "decision_viewers must be 0"),
        (lambda: load_config("base", None, {"copy_share": "30%"}), "expected a number"),
        (lambda: load_config("base", None, {"copy_share": "1.3"}), "copy_share must be within"),
        (lambda: load_config("base", None, {"copy_mix": "lookup=2,quote=1"}), "copy_mix: 'quote=1' is not KIND=WEIGHT"),
        (
            lambda: load_config("base", None, {"copy_mix": "lookup=lots"}),
            "copy_mix: the weight of lookup must be a number",
        ),
        (lambda: load_config("base", None, {"copy_mix": "echo=-1"}), "copy_mix: the weight of echo must be 0 or more"),
        (lambda: load_config("base", None, {"copy_mix": "echo=0"}), "copy_mix: at least one copy kind"),
    ],
)
def test_bad_config_values_say_what_to_change(build, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_every_field_has_help_text():
    for stage in STAGES:
        assert all(text for _, text, _ in field_help(stage)), stage


def test_max_length_is_sized_from_the_data_and_cut_rows_are_counted_before_training(trajectories_dir, tiny_model_path):
    from transformers import AutoTokenizer

    rows = read_chat_rows(trajectories_dir, "train")
    lengths = token_lengths(rows, AutoTokenizer.from_pretrained(tiny_model_path))
    plan = plan_lengths(lengths, requested=0, max_positions=4096, max_share=0.0)
    assert plan.over == 0 and plan.longest == max(lengths) and plan.max_length % 64 == 0
    assert plan.max_length - 64 < max(lengths) <= plan.max_length
    short = sorted(lengths)[len(lengths) // 2]
    with pytest.raises(Exception, match=r"rows .* are longer than max_length .* raise max_length to"):
        plan_lengths(lengths, requested=short, max_positions=4096, max_share=0.02)
    assert plan_lengths(lengths, requested=short, max_positions=4096, max_share=1.0).over >= len(lengths) // 2 - 1


def test_rows_under_one_harness_join_into_one_chat_and_no_turn_is_lost_or_crosses_harnesses(trajectories_dir):
    rows = read_chat_rows(trajectories_dir, "train")
    key = lambda row: (row["messages"][0]["content"], json.dumps(row["tools"], sort_keys=True))  # noqa: E731
    joined = join_viewer_rows(rows, 3)
    assert join_viewer_rows(rows, 1) is rows and len(joined) < len(rows)
    # every turn after each row's system prompt is kept, once, in order, under that row's own harness
    by_harness: dict = {}
    for row in rows:
        by_harness.setdefault(key(row), []).extend(row["messages"][1:])
    rejoined: dict = {}
    for row in joined:
        assert [m["role"] for m in row["messages"]].count("system") == 1
        rejoined.setdefault(key(row), []).extend(row["messages"][1:])
    assert rejoined == by_harness
    # as few chats as chunks of three allow, per harness
    sizes = Counter(key(row) for row in rows)
    assert len(joined) == sum(-(-n // 3) for n in sizes.values())


def test_decision_rows_add_copies_cut_after_the_first_call_and_keep_every_row_whole(trajectories_dir):
    rows = read_chat_rows(trajectories_dir, "train")
    assert training_chats(rows) == (rows, 0)
    out, n = training_chats(rows, decision_rows=0.5)
    assert out[: len(rows)] == rows  # the whole rows come first, untouched
    extra = out[len(rows) :]
    assert n == len(extra) and len(rows) // 2 - 1 <= len(extra) <= len(rows) // 2
    for cut in extra:
        roles = [m["role"] for m in cut["messages"]]
        assert roles[-1] == "assistant" and roles.count("assistant") == 1 and "tool" not in roles
        whole = next(r for r in rows if r["messages"][: len(roles)] == cut["messages"])
        assert len(whole["messages"]) > len(roles) and whole["tools"] == cut["tools"]


def test_decision_chats_join_many_first_calls_under_one_harness(trajectories_dir):
    rows = read_chat_rows(trajectories_dir, "train")
    cuts = decision_cuts(rows, 1.0)
    chats, n = training_chats(rows, viewers_per_row=2, decision_rows=1.0, decision_viewers=8)
    whole, decisions = chats[: len(chats) - n], chats[len(chats) - n :]
    assert whole == join_viewer_rows(rows, 2)
    assert decisions == join_viewer_rows(cuts, 8) and len(decisions) < len(cuts)
    for chat in decisions:
        roles = [m["role"] for m in chat["messages"]]
        # one harness, then question / first call pairs, never a tool result
        assert roles[0] == "system" and roles.count("system") == 1 and "tool" not in roles
        assert roles[1:] == ["user", "assistant"] * (len(roles[1:]) // 2)
        assert 1 <= roles.count("assistant") <= 8
    assert sum([m["role"] for m in chat["messages"]].count("assistant") for chat in decisions) == len(cuts)
    # with decision_viewers 0 the cuts join as the whole rows do
    assert training_chats(rows, viewers_per_row=2, decision_rows=1.0)[0][len(whole) :] == join_viewer_rows(cuts, 2)


def test_decision_rows_above_one_cut_every_row_that_many_times_into_different_chats(trajectories_dir):
    rows = read_chat_rows(trajectories_dir, "train")
    once = decision_cuts(rows, 1.0)
    chats, n = training_chats(rows, decision_rows=2.0, decision_viewers=4)
    decisions = chats[len(rows) :]
    firsts = Counter(json.dumps(m, sort_keys=True) for c in decisions for m in c["messages"] if m["role"] == "user")
    assert sorted(firsts.values()) == sorted(
        2 * v for v in Counter(json.dumps(c["messages"][1], sort_keys=True) for c in once).values()
    )
    # the two copies of a viewer do not sit in the same chats every time
    neighbours = [tuple(json.dumps(m, sort_keys=True) for m in c["messages"][1::2]) for c in decisions]
    assert len(set(neighbours)) > len(neighbours) // 2


def test_the_general_corpus_answers_satisfy_the_ifeval_checkers():
    from harnessctl.eval.ifeval import IFEvalCase, score_response

    rows = general_rows(300, seed=5)
    checked = [r for r in rows if "check" in r["meta"]]
    assert len(checked) > 80 and {r["meta"]["kind"] for r in rows} == {"instruction", "chat", "tool_use"}
    kinds = {r["meta"]["check"]["instruction_id_list"][0] for r in checked}
    assert len(kinds) >= 8
    for r in checked:
        c = r["meta"]["check"]
        case = IFEvalCase("x", r["messages"][0]["content"], c["instruction_id_list"], c["kwargs"])
        assert score_response(case, r["messages"][1]["content"]).prompt_strict, r


def test_the_general_corpus_is_disjoint_from_every_eval_suite():
    suite_texts = []
    for path in (REPO / "evals").glob("*.jsonl"):
        if path.name == "labels.jsonl":
            continue
        for line in path.read_text().splitlines():
            d = json.loads(line)
            suite_texts += [str(d.get(k, "")) for k in ("prompt", "query", "base") if d.get(k)]
    suites = set(suite_texts)
    joined = "\n".join(suite_texts).lower()
    rows = general_rows(2000, seed=0)
    prompts = {m["content"] for r in rows for m in r["messages"] if m["role"] == "user"} | set(general_prompts(500))
    assert not prompts & suites
    assert not [t for t in TOPICS if t in joined]  # not even the topics appear in an eval prompt


def test_tool_use_rows_render_with_the_tiny_template_and_name_a_listed_tool(tiny_model_path):
    from transformers import AutoTokenizer

    from trainer.data import check_row

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    rows = [r for r in general_rows(200, seed=1) if r["meta"]["kind"] == "tool_use"]
    assert any(r["meta"]["canonical"] for r in rows) and not all(r["meta"]["canonical"] for r in rows)
    for r in rows[:20]:
        listed = {t["function"]["name"] for t in r["tools"]}
        called = {c["function"]["name"] for m in r["messages"] for c in m.get("tool_calls", [])}
        assert called and called <= listed
        row = check_row(r, "row")
        assert token_lengths([row], tokenizer)[0] < 512


def test_the_general_corpus_is_the_one_shipped_checkpoints_were_trained_on():
    # Draw for draw: `experiment hat` (full) must still reproduce the shipped checkpoints. The hash
    # is the data_hash the full study's stage 0 recorded in its train.json (4,800 rows, seed 0).
    from trainer.common import text_hash

    rows = general_rows(4800, seed=0)
    assert {r["meta"]["kind"] for r in rows} == {"instruction", "chat", "tool_use"}
    assert text_hash(json.dumps(rows, sort_keys=True)) == (
        "bd0dabebffdd325db19d03f2b203c0c6cf5a73233c8bc805717a97d4adc0b769"
    )
    with pytest.raises(ValueError, match="extra_share"):
        general_rows(3, extra_share=1.5, extra_row=lambda rng: {})


def test_efficiency_is_rewarded_in_proportion_to_the_task_done():
    from trainer.rewards import reward_functions

    funcs, weights = reward_functions({"correctness": 0.4, "efficiency": 0.1}, think_penalty=0.01)
    idle = {"correctness": 0.0, "efficiency": 1.0, "task": 0.0}  # a short empty reply
    done = {"correctness": 1.0, "efficiency": 1.0, "task": 1.0}
    rewards = [f(prompts=["p", "p"], completions=["", ""], components=[idle, done], think_over=[0, 40]) for f in funcs]
    assert rewards == [[0.0, 1.0], [0.0, 1.0], [0.0, -0.4]] and weights == [0.4, 0.1, 1.0]


def test_stage_0_draws_random_batches_and_sft_batches_by_length(tiny_model_path, tmp_path):
    # From scratch, length-grouped batches of the general corpus each hold one kind of row, and
    # the full study's stage 0 stalled at loss 1.78 (0.36 with random batches); trajectories are
    # one kind of row, and grouping them only saves padding.
    from torch.utils.data import RandomSampler
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from trainer.base_config import BaseStageConfig
    from trainer.common import load_model
    from trainer.sft import fit_rows, sft_trainer

    base_cfg = BaseStageConfig(out=str(tmp_path / "base"), model=str(tiny_model_path), per_device_batch_size=2)
    model, tokenizer = load_model(tiny_model_path, base_cfg)
    rows, info = fit_rows(general_rows(8, seed=0), tokenizer, model, base_cfg.max_length, max_share=0.0)
    base = sft_trainer(model, tokenizer, rows, base_cfg, info["max_length"])
    assert isinstance(base._get_train_sampler(), RandomSampler)
    sft_cfg = SFTStageConfig(out=str(tmp_path / "sft"), model=str(tiny_model_path), per_device_batch_size=2)
    sft = sft_trainer(model, tokenizer, rows, sft_cfg, info["max_length"])
    assert isinstance(sft._get_train_sampler(), LengthGroupedSampler)


def test_balanced_decision_chats_give_every_first_call_equal_weight_and_never_repeat_one_in_a_chat(trajectories_dir):
    from trainer.data import first_call

    rows = read_chat_rows(trajectories_dir, "train")
    cuts = decision_cuts(rows, 2.0)
    chats, n = training_chats(rows, decision_rows=2.0, decision_viewers=6, decision_balance=True)
    decisions = chats[len(rows) :]
    assert n == len(decisions) and chats[: len(rows)] == rows

    def harness(row):
        return (row["messages"][0]["content"], json.dumps(row["tools"], sort_keys=True))

    def viewers(chat):
        msgs = chat["messages"]
        return [{"messages": [msgs[0], msgs[i], msgs[i + 1]], "tools": chat["tools"]} for i in range(1, len(msgs), 2)]

    per_harness: dict = {}
    for chat in decisions:
        calls = [first_call(v) for v in viewers(chat)]
        assert len(calls) == len(set(calls)) and len(calls) <= 6  # no call twice in one chat
        per_harness.setdefault(harness(chat), Counter()).update(calls)
    cut_counts = Counter(harness(c) for c in cuts)
    for key, counts in per_harness.items():
        distinct = {first_call(c) for c in cuts if harness(c) == key}
        assert set(counts) == distinct  # every call of the harness is taught
        assert max(counts.values()) - min(counts.values()) <= 1  # and equally often
        # as many cut viewers as the harness had, up to one round of the calls
        assert cut_counts[key] <= sum(counts.values()) < cut_counts[key] + len(distinct)
