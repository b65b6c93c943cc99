"""`harnessctl model probe`: the skill choice alone, under teacher forcing, on dataset rows."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from harnessctl.cli.main import app
from trainer.data import read_chat_rows
from trainer.probes import _with_choice, choice_items, option_logprobs, skill_choice_probe

runner = CliRunner()


@pytest.fixture(scope="module")
def fixed_rows_dir(tmp_path_factory, livecommerce_path) -> Path:
    """60 oracle trajectories under the shipped harness, as the fixed-SFT data is written."""
    from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
    from harnessctl.harness import load_harness

    out = tmp_path_factory.mktemp("probe") / "fixed"
    build_trajectories(load_harness(livecommerce_path), out, TrajectorySpec(n=60, seed=11, fixed_harness=True), jobs=1)
    return out


def test_every_row_that_loads_a_skill_first_gives_one_choice_from_its_listing(trajectories_dir):
    rows = read_chat_rows(trajectories_dir)
    items, without = choice_items(rows)
    assert items and len(items) + without == len(rows)
    for item in items:
        call = item.turn["tool_calls"][0]["function"]
        spec = next(t["function"] for t in item.tools if t["function"]["name"] == call["name"])
        assert item.options == spec["parameters"]["properties"][item.parameter]["enum"]
        assert item.chosen == json.loads(call["arguments"])[item.parameter] and item.chosen in item.options
        assert item.messages[-1]["role"] == "user"  # the context ends with the viewer's message


def test_each_options_probability_is_the_whole_sequences_own(tiny_model_path, trajectories_dir):
    """The context runs once and each option's turn on a copy of its cache; the result must be
    what one forward pass over context + turn gives."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    items, _ = choice_items(read_chat_rows(trajectories_dir))
    for item in items[:2]:
        fast = option_logprobs(model, tok, item)
        prompt = tok.apply_chat_template(item.messages, tools=item.tools, add_generation_prompt=True, tokenize=False)
        start = len(tok(prompt, add_special_tokens=False)["input_ids"])
        for option in item.options[:3]:
            text = tok.apply_chat_template(
                [*item.messages, _with_choice(item.turn, item.parameter, option)], tools=item.tools, tokenize=False
            )
            ids = tok(text, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0]
            logp = torch.log_softmax(logits[:-1], -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
            assert fast[option] == pytest.approx(float(logp[start - 1 :].sum()), abs=1e-3)


def test_a_trained_model_chooses_the_skill_and_an_untrained_one_does_not(tiny_model_path, fixed_rows_dir):
    rows = read_chat_rows(fixed_rows_dir)
    from harnessctl.models.registry import shipped_model_dir

    trained = skill_choice_probe(str(shipped_model_dir("fixed-sft-1600")), rows=rows, n=12)
    untrained = skill_choice_probe(str(tiny_model_path), rows=rows, n=12)
    assert trained["rows"] == untrained["rows"] == 12 and trained["chance"] == untrained["chance"] < 0.2
    assert trained["correct"] >= 10, trained
    assert untrained["correct"] <= 4, untrained
    assert sum(c["rows"] for c in untrained["confusions"]) <= 12 - untrained["correct"]


def test_the_probe_from_the_command_line(fixed_rows_dir, tmp_path):
    res = runner.invoke(
        app, ["model", "probe", "shipped:fixed-sft-1600", "--data", str(fixed_rows_dir), "--rows", "4", "--json"]
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["rows"] == 4 and 0 <= report["correct"] <= 4 and report["split"] == "train"
    assert report["dataset_rows"] >= report["rows"] + report["without_choice"]
    text = runner.invoke(
        app, ["model", "probe", "shipped:fixed-sft-1600", "--data", str(fixed_rows_dir), "--rows", "2"]
    )
    assert text.exit_code == 0 and "skill choice under teacher forcing:" in text.stdout

    (tmp_path / "replies").mkdir()
    row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello!"}], "tools": []}
    (tmp_path / "replies" / "train.jsonl").write_text(json.dumps(row) + "\n")
    for args, message in (
        (["openai/tiny", "--data", str(fixed_rows_dir)], "not a checkpoint folder"),
        (["shipped:nope", "--data", str(fixed_rows_dir)], "nope"),
        (["shipped:fixed-sft-1600", "--data", str(tmp_path / "none")], "no such folder"),
        (
            ["shipped:fixed-sft-1600", "--data", str(fixed_rows_dir), "--split", "test"],
            "--split: expected train or validation",
        ),
        (["shipped:fixed-sft-1600", "--data", str(tmp_path / "replies")], "makes a choice from a listing"),
    ):
        res = runner.invoke(app, ["model", "probe", *args])
        assert res.exit_code == 2, (args, res.output)
        assert message in res.stderr and "Traceback" not in res.output


def test_with_the_shipped_harness_the_probe_splits_kept_names_from_renamed_ones(
    trajectories_dir, livecommerce_path, tmp_path
):
    """A model that memorised the shipped surface is right only where a variant kept the skill's
    name; the split tells that from reading the listing."""
    from harnessctl.harness import load_harness

    shipped = {skill.name for skill in load_harness(livecommerce_path).skills}
    rows = read_chat_rows(trajectories_dir)
    random.Random(0).shuffle(rows)  # the probe's row order at --seed 0
    items, _ = choice_items(rows)
    renamed = sum(item.chosen not in shipped for item in items[:12])
    assert 0 < renamed < 12  # the fixture's variants rename some skills and keep others

    probe = ["model", "probe", "shipped:hat", "--data", str(trajectories_dir), "--rows", "12"]
    res = runner.invoke(app, [*probe, "-H", str(livecommerce_path)])
    assert res.exit_code == 0, res.output
    assert "the skill keeps its shipped name:" in res.stdout and "a variant renamed it:" in res.stdout

    report = json.loads(runner.invoke(app, [*probe, "-H", str(livecommerce_path), "--json"]).stdout)
    split = report["by_name"]
    assert split["renamed"]["rows"] == renamed and split["shipped"]["rows"] == 12 - renamed
    assert split["renamed"]["correct"] + split["shipped"]["correct"] == report["correct"]
    assert "by_name" not in json.loads(runner.invoke(app, [*probe, "--json"]).stdout)

    res = runner.invoke(app, [*probe, "-H", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such harness folder" in res.stderr and "Traceback" not in res.output


def test_on_rows_that_quote_the_skill_each_option_is_scored_with_its_own_quoted_line(tmp_path, livecommerce_path):
    # A quoted row names its answer before the call: scoring every option after that same quote
    # would measure a copy, not the choice.
    from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
    from harnessctl.harness import load_harness

    spec = TrajectorySpec(n=30, seed=7, variants=4, quote_skills=True)
    build_trajectories(load_harness(livecommerce_path), tmp_path / "quoted", spec, jobs=1)
    items, _ = choice_items(read_chat_rows(tmp_path / "quoted"))
    quoted = [i for i in items if (i.turn.get("content") or "").startswith("<think>")]
    assert len(quoted) >= 10
    for item in quoted:
        listing = item.messages[0]["content"]
        for option in item.options:
            turn = _with_choice(item.turn, item.parameter, option, listing)
            line = turn["content"].removeprefix("<think>").removesuffix("</think>").split("; ")[0]
            assert line.endswith(f" : {option}") and f"- {line}\n" in listing + "\n"
            assert json.loads(turn["tool_calls"][0]["function"]["arguments"])[item.parameter] == option
        unchanged = _with_choice(item.turn, item.parameter, item.chosen, listing)
        assert unchanged["content"] == item.turn["content"]  # the row's own option: the row as written
