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
from trainer.probes import (
    GREEDY_OUTCOMES,
    ChoiceItem,
    _with_choice,
    choice_items,
    greedy_choice_probe,
    option_logprobs,
    probe_items,
    read_first_turn,
    skill_choice_probe,
)

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


def test_a_greeting_answered_before_the_question_is_context_not_a_row_without_a_choice():
    """A third of the simulator's cases open with a greeting the assistant answers without a call;
    the choice is the turn that answers the viewer's question after it."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "fetch_guide",
                "parameters": {"type": "object", "properties": {"id": {"type": "string", "enum": ["a", "b"]}}},
            },
        }
    ]
    call = {"type": "function", "function": {"name": "fetch_guide", "arguments": '{"id": "b"}'}}
    messages = [
        {"role": "system", "content": "- say hello : a\n- tell prices : b"},
        {"role": "user", "content": "hi!"},
        {"role": "assistant", "content": "Hi, welcome to the show!"},
        {"role": "user", "content": "how much is it?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    items, without = choice_items([{"messages": messages, "tools": tools}])
    assert without == 0 and items[0].chosen == "b" and items[0].options == ["a", "b"]
    assert items[0].messages == messages[:4]  # the greeting and its answer stay in the context
    direct = [*messages[:2], {"role": "assistant", "content": "Hi there!"}]
    assert choice_items([{"messages": direct, "tools": tools}]) == ([], 1)


def _quote_item() -> ChoiceItem:
    tools = [
        {"type": "function", "function": {"name": "fetch_guide", "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {"name": "check_stock", "parameters": {"type": "object", "properties": {}}}},
    ]
    turn = {"content": "", "tool_calls": [{"function": {"name": "fetch_guide", "arguments": '{"id": "pay_b"}'}}]}
    messages = [{"role": "system", "content": "Guides:\n- say hello : hello_a\n- tell prices : pay_b"}]
    return ChoiceItem(
        [*messages, {"role": "user", "content": "price?"}], tools, turn, "id", ["hello_a", "pay_b"], "pay_b"
    )


@pytest.mark.parametrize(
    ("content", "calls", "expected"),
    [
        ("", [("fetch_guide", {"id": "pay_b"})], {"outcome": "right", "called": "pay_b"}),
        ("", [("fetch_guide", {"id": "hello_a"})], {"outcome": "other_option", "called": "hello_a"}),
        ("", [("fetch_guide", {"id": "explain_price"})], {"outcome": "unlisted", "called": "explain_price"}),
        ("", [("fetch_guide", None)], {"outcome": "unlisted", "called": None}),
        ("", [("check_stock", {})], {"outcome": "other_tool", "tool": "check_stock"}),
        ("", [("load_skill", {"id": "pay_b"})], {"outcome": "unknown_tool", "tool": "load_skill", "called": None}),
        ("It is $12!", [], {"outcome": "no_call", "tool": None}),
        (
            "<think>tell prices : pay_b</think>",
            [("fetch_guide", {"id": "pay_b"})],
            {"quote_in_listing": True, "quote_right": True, "quote_names_call": True},
        ),
        (
            "<think>tell prices : explain_price</think>",  # the line, with the name learned by heart
            [("fetch_guide", {"id": "explain_price"})],
            {"outcome": "unlisted", "quote_in_listing": False, "quote_right": False, "quote_names_call": True},
        ),
        (
            "<think>say hello : hello_a</think>",  # a real line, the wrong one, and a call that ignores it
            [("fetch_guide", {"id": "pay_b"})],
            {"outcome": "right", "quote_in_listing": True, "quote_right": False, "quote_names_call": False},
        ),
    ],
)
def test_a_written_first_turn_is_read_as_what_it_did_with_the_choice(content, calls, expected):
    from harnessctl.models.types import ModelResponse, ToolCall

    response = ModelResponse(content=content, tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls])
    reading = read_first_turn(_quote_item(), response)
    assert reading["outcome"] in GREEDY_OUTCOMES
    assert {k: reading.get(k) for k in expected} == expected
    assert ("quote" in reading) == content.startswith("<think>")


class _Answers:
    """A backend that calls the listing's first option on every row (right only where that is the
    row's choice) and, on rows whose viewer message has an even length, the shipped loader name."""

    name = "scripted"

    def generate(self, messages, tools, settings):
        from harnessctl.models.types import ModelResponse, ToolCall

        assert settings.temperature == 0.0  # greedy
        if len(messages[-1]["content"]) % 2 == 0:
            return ModelResponse(tool_calls=[ToolCall(name="not_a_listed_tool", arguments={})])
        tool = next(t["function"] for t in tools if "enum" in str(t["function"].get("parameters")))
        (parameter, schema), *_ = [(p, s) for p, s in tool["parameters"]["properties"].items() if "enum" in s]
        return ModelResponse(tool_calls=[ToolCall(name=tool["name"], arguments={parameter: schema["enum"][0]})])

    def for_episode(self, case, harness):
        return self


def test_the_greedy_probe_counts_what_each_first_turn_did(trajectories_dir):
    rows = read_chat_rows(trajectories_dir)
    items, _, _ = probe_items(rows, n=30, seed=0)
    report = greedy_choice_probe(_Answers(), rows=rows, n=30, jobs=4, shipped_loader="load_skill")
    odd = [i for i in items if len(i.messages[-1]["content"]) % 2]
    right = sum(i.chosen == i.options[0] for i in odd)
    assert report["rows"] == len(items) == len(report["readings"])
    assert report["correct"] == report["outcomes"]["right"] == right
    assert report["outcomes"]["other_option"] == len(odd) - right
    assert report["outcomes"]["unknown_tool"] == len(items) - len(odd) > 0
    assert sum(report["outcomes"].values()) == report["rows"] and report["quotes"]["rows"] == 0
    # the loader split: every odd row calls its own loader, whatever the variant named it
    loader = report["loader"]
    renamed = [i for i in items if i.turn["tool_calls"][0]["function"]["name"] != "load_skill"]
    assert loader["renamed"]["rows"] == len(renamed) and loader["kept"]["rows"] == len(items) - len(renamed)
    assert loader["renamed"]["called"] == sum(i in odd for i in renamed)
    assert loader["kept"]["called"] + loader["renamed"]["called"] == len(odd)
    # the same rows as teacher forcing reads, in the same order
    assert [r["chosen"] for r in report["readings"]] == [i.chosen for i in items]


def test_greedy_from_the_command_line_in_process_and_served_read_the_same_turns(fixed_rows_dir, tmp_path):
    """--greedy asks any model: the shipped checkpoint in process, and the same checkpoint behind
    the embedded server through litellm, write the same greedy turns."""
    from harnessctl.models.registry import resolve_model
    from harnessctl.models.server import EmbeddedServer

    probe = ["model", "probe", "--data", str(fixed_rows_dir), "--rows", "12", "--greedy", "--json"]
    res = runner.invoke(app, [*probe[:2], "shipped:fixed-sft-1600", *probe[2:]])
    assert res.exit_code == 0, res.output
    local = json.loads(res.stdout)
    assert local["reading"] == "greedy" and local["rows"] == 12
    assert sum(local["outcomes"].values()) == 12 and local["correct"] == local["outcomes"]["right"] >= 6

    server = EmbeddedServer(resolve_model("shipped:fixed-sft-1600"), model_name="fixed").start()
    try:
        res = runner.invoke(app, [*probe[:2], "openai/fixed", *probe[2:], "--api-base", server.url])
        assert res.exit_code == 0, res.output
        served = json.loads(res.stdout)
        text = runner.invoke(
            app,
            [
                "model",
                "probe",
                "openai/fixed",
                "--data",
                str(fixed_rows_dir),
                "--rows",
                "6",
                "--greedy",
                "--api-base",
                server.url,
            ],
        )
    finally:
        server.stop()
    assert served["readings"] == local["readings"]
    assert text.exit_code == 0 and "skill choice in greedy first turns:" in text.stdout

    for args, message in (
        (["shipped:fixed-sft-1600", "--api-base", "http://127.0.0.1:9/v1"], "--api-base goes with --greedy"),
        (["oracle", "--greedy"], "answer key"),
        (["shipped:nope", "--greedy"], "nope"),
    ):
        res = runner.invoke(app, ["model", "probe", *args, "--data", str(fixed_rows_dir)])
        assert res.exit_code == 2, (args, res.output)
        assert message in res.stderr and "Traceback" not in res.output


def test_an_adapter_folder_is_probed_on_its_base_with_and_without_greedy(fixed_rows_dir, small_base, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from harnessctl.models.adapters import base_entry, save_adapter

    adapter = tmp_path / "adapter"
    save_adapter(get_peft_model(AutoModelForCausalLM.from_pretrained(small_base), LoraConfig(r=2)), adapter)
    (adapter / "train.json").write_text(json.dumps({"stage": "sft", "base": base_entry(str(small_base), small_base)}))
    for extra in ([], ["--greedy", "--max-tokens", "4"]):
        res = runner.invoke(
            app, ["model", "probe", str(adapter), "--data", str(fixed_rows_dir), "--rows", "2", "--json", *extra]
        )
        assert res.exit_code == 0, (extra, res.output)
        assert json.loads(res.stdout)["rows"] == 2
