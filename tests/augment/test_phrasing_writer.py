"""A teacher model writes viewer phrasings: every line checked, refusals counted, the file
written kind by kind, kept and completed on a rerun, answers cached."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harnessctl.augment.phrasing_writer import parse_answer, phrasing_prompt, write_phrasings
from harnessctl.cli.main import app
from harnessctl.models.registry import resolve_model
from harnessctl.models.server import serve_in_background
from harnessctl.models.types import ModelResponse
from harnessctl.sim.phrasings import load_phrasings
from harnessctl.sim.templates import templates_for

runner = CliRunner()


class Teacher:
    """A model client answering each request with the next prepared answer, recording prompts."""

    name = "teacher"

    def __init__(self, *answers: str):
        self.answers, self.prompts = list(answers), []

    def generate(self, messages, tools, settings):
        self.prompts.append(messages[-1]["content"])
        return ModelResponse(content=self.answers.pop(0))


def test_the_teacher_sees_the_brief_and_training_templates_never_a_held_out_one():
    prompt = phrasing_prompt("stock_variant", 4)[1]["content"]
    assert "every message must use {variant}" in prompt
    assert all(t in prompt for t in templates_for("stock_variant", "train"))
    assert not any(t in prompt for t in templates_for("stock_variant", "eval"))


def test_each_line_is_checked_and_what_fails_is_counted_by_reason(tmp_path):
    held_out = templates_for("price", "eval")[0]
    teacher = Teacher(
        f'1. "hw much rn for {{this}}"\n2. {held_out}\n3. price of {{order}}\n4. HW MUCH RN FOR {{this}}!\n- {{name}} cost?',
        "is {this} worth the money",
    )
    report = write_phrasings(
        tmp_path / "v.yaml", "teacher", per_kind=3, kinds=["price"], backend=teacher, cache_dir=tmp_path / "c"
    )
    assert load_phrasings(tmp_path / "v.yaml") == {
        "price": ["hw much rn for {this}", "{name} cost?", "is {this} worth the money"]
    }
    assert report.refused == {"held_out": 1, "bad_placeholder": 1, "repeat": 1}
    assert report.calls == 2 and report.short == []
    # The second request asked for the one still missing and listed what was kept.
    assert teacher.prompts[1].startswith("Write 1 new messages") and "{name} cost?" in teacher.prompts[1]


def test_a_rerun_keeps_the_file_asks_only_for_what_is_missing_and_answers_come_from_the_cache(tmp_path):
    out, cache = tmp_path / "v.yaml", tmp_path / "c"
    write_phrasings(
        out, "teacher", per_kind=2, kinds=["greeting"], backend=Teacher("yo from {city}\nhiii"), cache_dir=cache
    )
    again = write_phrasings(out, "teacher", per_kind=2, kinds=["greeting"], backend=Teacher(), cache_dir=cache)
    assert again.calls == 0 and again.added == 0 and load_phrasings(out)["greeting"] == ["yo from {city}", "hiii"]
    more = write_phrasings(
        out,
        "teacher",
        per_kind=2,
        kinds=["greeting", "shipping"],
        backend=Teacher("shipping time?? 🚚\nhow long to get here"),
        cache_dir=cache,
    )
    assert more.calls == 1 and load_phrasings(out) == {
        "greeting": ["yo from {city}", "hiii"],
        "shipping": ["shipping time?? 🚚", "how long to get here"],
    }


def test_parse_answer_drops_list_marks_quotes_and_blank_lines():
    assert parse_answer("* 'a {this}'\n\n  2) b\n") == ["a {this}", "b"]


def test_the_project_model_served_writes_a_file_that_passes_the_checks_or_says_it_wrote_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the answer cache lands under .harnessctl/ here
    url, stop = serve_in_background(resolve_model("shipped:hat"), model_name="hat")
    try:
        args = ["phrasings", "write", "v.yaml", "-m", "openai/hat", "--api-base", url, "--kinds", "price,greeting"]
        result = runner.invoke(app, [*args, "--per-kind", "2", "--json"])
        assert result.exit_code in (0, 1), result.output
        assert "Traceback" not in result.output
        if result.exit_code == 0:
            report = json.loads(result.stdout)
            assert sum(report["kept"].values()) == report["added"] > 0 and report["calls"] >= 1
            check = runner.invoke(app, ["phrasings", "check", "v.yaml"])
            assert check.exit_code == 0, check.output
        else:
            assert "wrote no usable phrasing" in result.stderr and not (tmp_path / "v.yaml").exists()
        again = runner.invoke(app, [*args, "--per-kind", "2", "--json"])
        assert again.exit_code == result.exit_code
        if again.exit_code == 0:
            assert json.loads(again.stdout)["calls"] == 0  # every answer from the cache
    finally:
        stop()


def test_the_oracle_cannot_write_phrasings_and_a_bad_existing_file_is_named(tmp_path):
    result = runner.invoke(app, ["phrasings", "write", str(tmp_path / "v.yaml"), "-m", "oracle"])
    assert result.exit_code == 2 and "cannot write phrasings" in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("phrasings:\n  price:\n    - 'price of {order}'\n", encoding="utf-8")
    result = runner.invoke(app, ["phrasings", "write", str(bad), "-m", "shipped:hat", "--kinds", "price"])
    assert result.exit_code == 2 and f"{bad}:3:7: price[0] {{order}} is not a placeholder" in result.stderr
    with pytest.raises(ValueError, match="unknown message kind 'prices'"):
        write_phrasings(tmp_path / "v.yaml", "t", kinds=["prices"], backend=Teacher())
