"""Stage 3: whole episodes as GRPO rollouts, token in and token out.

The tokens trained are exactly the tokens sampled, turn by turn; environment tokens (tool results,
skill text, runtime notes) are masked and get no gradient; the rewards are the rubric's components;
the policy never sees the case's answer key; each prompt group gets its own harness variant.
"""

from __future__ import annotations

import pytest

from tests.trainer.conftest import oracle_sampler, weights_differ


@pytest.fixture(scope="module")
def rl_parts(tiny_model_path, tmp_path_factory):
    from trainer.common import load_model
    from trainer.rl import build_rl_trainer
    from trainer.stage_configs import load_config

    cfg = load_config(
        "rl",
        "tiny-cpu",
        {
            "model": str(tiny_model_path),
            "out": str(tmp_path_factory.mktemp("rl") / "model"),
            "cases": 6,
            "num_generations": 2,
            "per_device_batch_size": 4,
            "max_turn_tokens": 160,
            "max_steps": 1,
            "learning_rate": 1e-3,
            "logging_steps": 1,
            "save_steps": 1,
        },
    )
    model, tokenizer = load_model(cfg.model, cfg)
    trainer, rollout = build_rl_trainer(cfg, model, tokenizer)
    return cfg, model, tokenizer, trainer, rollout


def test_trained_tokens_are_the_sampled_ones_and_the_environment_is_masked(rl_parts):
    cfg, model, tokenizer, trainer, rollout = rl_parts
    from trainer.episodes import run_rollout_episode

    case = next(iter(rollout.cases.values()))
    policy = oracle_sampler(rollout)(model, case, rollout.source)
    from harnessctl.sim.world import World

    record, policy = run_rollout_episode(policy, rollout.source, case, World(case=case, fault_rates=0.0))
    assert len(policy.turns) >= 3 and record.termination.value == "reply"  # skill, tool, reply
    seq = policy.prompt_ids + policy.completion_ids
    sampled = [t for t, m in zip(policy.completion_ids, policy.env_mask, strict=True) if m == 1]
    assert sampled == [t for turn in policy.turns for t in turn["sampled_ids"]]
    for turn in policy.turns:  # token in: each turn saw exactly the sequence so far, never a re-rendering
        assert seq[: len(turn["input_ids"])] == turn["input_ids"]
        start = len(turn["input_ids"])
        assert seq[start : start + len(turn["sampled_ids"])] == turn["sampled_ids"]
    # The masked tokens are the environment's turns: tool results and skill text, as the template renders them.
    env_text = tokenizer.decode([t for t, m in zip(policy.completion_ids, policy.env_mask, strict=True) if m == 0])
    for message in record.messages[3:]:
        if message["role"] == "tool":
            assert message["content"] in env_text
    rendered = tokenizer.apply_chat_template(
        __import__("harnessctl.models.local", fromlist=["_template_messages"])._template_messages(record.messages),
        tools=record.tools,
        tokenize=False,
    )
    assert tokenizer.decode(seq) == rendered.rstrip("\n")  # the whole sequence is the rendered chat
    assert len(policy.logprobs) == len(policy.completion_ids) == len(policy.env_mask)


def test_masked_positions_get_zero_gradient(rl_parts):
    import torch

    cfg, model, tokenizer, trainer, rollout = rl_parts
    rollout.policy_factory = oracle_sampler(rollout)
    case_id = next(iter(rollout.cases))
    inputs = trainer._generate_and_score_completions([{"prompt": "case:" + case_id}] * cfg.num_generations)
    mask = inputs["completion_mask"] * inputs["tool_mask"]
    assert (inputs["tool_mask"] == 0).any() and (mask == 1).any()
    inputs["advantages"] = torch.ones_like(inputs["advantages"])  # a gradient wherever the loss reaches
    captured = {}

    def keep(module, args, output):  # the final hidden states: row t feeds only the prediction of token t+1
        output.retain_grad()
        captured["hidden"] = output

    trainer.current_gradient_accumulation_steps = 1  # set by the training loop; one micro-batch here
    hook = model.model.norm.register_forward_hook(keep)
    try:
        model.train()
        model.zero_grad()
        trainer.compute_loss(model, inputs).backward()
    finally:
        hook.remove()
    width = inputs["completion_ids"].shape[1]
    grad = captured["hidden"].grad[:, -(width + 1) : -1].float().abs().sum(-1)  # row t predicts completion token t
    env = (inputs["completion_mask"] == 1) & (inputs["tool_mask"] == 0)
    assert env.sum() > 0 and float(grad[env].max()) == 0.0
    assert float(grad[mask == 1].min()) > 0.0


def test_rewards_are_the_rubric_components_and_a_group_shares_one_variant(rl_parts):
    cfg, model, tokenizer, trainer, rollout = rl_parts
    rollout.policy_factory = oracle_sampler(rollout, bad_every=2)
    ids = list(rollout.cases)[:2]
    out = rollout.rollout(["case:" + ids[0]] * 2 + ["case:" + ids[1]] * 2, model)
    assert len(out["prompt_ids"]) == 4 and set(out) >= {"completion_ids", "logprobs", "env_mask", "components"}
    good, bad = out["components"][0], out["components"][1]
    assert good["correctness"] > bad["correctness"] and good["skill_selection"] == 1.0 and bad["skill_selection"] == 0.0
    variants = [e["variant"] for e in out["episode"]]
    assert variants[0] == variants[1] and variants[2] == variants[3]
    assert out["prompt_ids"][0] != out["prompt_ids"][2]  # another group: another harness surface
    funcs = trainer.reward_funcs
    assert [f.__name__ for f in funcs] == [
        "correctness",
        "efficiency",
        "tool_rationality",
        "skill_selection",
        "think_length",
    ]
    assert trainer.args.reward_weights == [0.4, 0.1, 0.3, 0.2, 1.0]


def test_the_policy_never_sees_the_answer_key(rl_parts):
    from harnessctl.models.base import viewer_view

    cfg, model, tokenizer, trainer, rollout = rl_parts
    case = next(c for c in rollout.cases.values() if c.expect.facts)
    rollout.policy_factory = oracle_sampler(rollout)
    calls = rollout.calls
    with_key = rollout.rollout(["case:" + case.id] * 2, model)
    rollout.calls = calls  # the same variant and world again, for the case without its answer key
    rollout.cases[case.id] = viewer_view(case)
    try:
        without = rollout.rollout(["case:" + case.id] * 2, model)
    finally:
        rollout.cases[case.id] = case
    assert with_key["prompt_ids"] == without["prompt_ids"]  # what the policy reads does not depend on the key
    prompt = tokenizer.decode(with_key["prompt_ids"][0])
    assert case.query in prompt and case.id not in prompt


def test_a_grpo_step_on_episodes_with_different_rewards_changes_the_weights(rl_parts, tiny_model_path):
    from pathlib import Path

    from trainer.common import run_trainer

    cfg, model, tokenizer, trainer, rollout = rl_parts
    rollout.policy_factory = oracle_sampler(rollout, bad_every=2)
    result = run_trainer(trainer, cfg, parent=cfg.model, data_hash="test", progress=False)
    assert result.steps == 1 and result.metrics["reward_std"] > 0
    assert weights_differ(Path(result.out), tiny_model_path) > 0
    from tests.trainer.test_stages import loads_and_answers

    loads_and_answers(Path(result.out))
    assert "rewards/correctness/mean" in result.metrics and "rewards/think_length/mean" in result.metrics


def test_each_group_gets_a_fresh_variant_and_no_hsa_keeps_the_harness(rl_parts):
    cfg, model, tokenizer, trainer, rollout = rl_parts
    rollout.policy_factory = oracle_sampler(rollout)
    prompt = "case:" + next(iter(rollout.cases))
    out = rollout.rollout([prompt] * 4, model)  # one case, two groups of two
    ids = out["prompt_ids"]
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
    rollout.cfg.hsa = False
    try:
        plain = rollout.rollout([prompt] * 4, model)["prompt_ids"]
    finally:
        rollout.cfg.hsa = True
    assert plain[0] == plain[2]
    assert tokenizer.decode(plain[0]).count(rollout.source.skill_loader.name) >= 1


def test_a_rollout_tells_each_episode_of_the_step_as_it_ends(rl_parts):
    # an RL step on a CPU is minutes of whole episodes: the progress counts them within the step
    cfg, model, tokenizer, trainer, rollout = rl_parts
    rollout.policy_factory = oracle_sampler(rollout)
    told: list[tuple[int, int, int]] = []
    rollout.on_episode = lambda done, total, step: told.append((done, total, step))
    try:
        rollout.rollout(["case:" + next(iter(rollout.cases))] * 2, model, step=3)
    finally:
        rollout.on_episode = None
    assert told == [(0, 2, 3), (1, 2, 3), (2, 2, 3)]


def test_in_a_log_file_an_rl_step_says_its_rollouts_done_with_the_rate_and_time_left(capsys):
    from types import SimpleNamespace

    from trainer.common import _callbacks

    progress = _callbacks(SimpleNamespace(stage="rl"), {}, True)[-1]
    state = SimpleNamespace(is_world_process_zero=True, global_step=0, max_steps=5)
    progress.on_train_begin(None, state, None)
    for step in (0, 1):
        for done in range(0, 5):
            progress.rollouts(done, 4, step)
    progress.on_train_end(None, state, None)
    lines = [line for line in capsys.readouterr().err.splitlines() if "rollouts" in line]
    assert [line.split(" (")[0] for line in lines] == [
        f"train rl step {s}/5 rollouts {n}/4" for s in (1, 2) for n in range(1, 5)
    ]
    assert "/s" in lines[1] or "/min" in lines[1]
    assert "left)" in lines[1] and "left)" not in lines[3]  # the last rollout of a step has nothing left
