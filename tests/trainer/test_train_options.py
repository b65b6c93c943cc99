"""``harnessctl train STAGE``'s options for config fields say what the field's metadata says (help,
type, the default shown): the help is written once, beside the field, and ``python -m trainer.STAGE
--help`` shows the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, get_type_hints

import pytest
import typer
from typer.testing import CliRunner

from harnessctl.cli.main import app
from trainer.stage_configs import CONFIG_CLASSES

SHARED = {"out", "model", "max_steps", "seed", "eval_suites", "eval_limit"}
#: The fields each stage has an option for, the others set with --set.
NAMED = {"base": SHARED, "sft": SHARED | {"data"}, "distill": SHARED | {"teacher", "prompts"}}
NAMED["rl"] = SHARED | {"harness", "hsa"}
#: The command line's type for each field type: a str field naming a folder or a file is a Path.
CLI_TYPES = {int: {int}, bool: {bool}, str: {str, Path}}


def field_options(stage: str) -> dict[str, Any]:
    """The stage command's options that set a config field, by field."""
    command = typer.main.get_command(app).commands["train"].commands[stage]  # type: ignore[attr-defined]
    fields = {f.name for f in dataclasses.fields(CONFIG_CLASSES[stage])}
    by_field = {"out_dir" if name == "out" else name: name for name in fields}  # `out` is the module's console
    return {by_field[p.name]: p for p in command.params if p.name in by_field}


@pytest.mark.parametrize("stage", sorted(CONFIG_CLASSES))
def test_each_named_option_has_its_fields_help_type_and_default(stage):
    options = field_options(stage)
    assert set(options) == NAMED[stage]
    fields = {f.name: f for f in dataclasses.fields(CONFIG_CLASSES[stage])}
    hints = get_type_hints(CONFIG_CLASSES[stage])
    for name, option in options.items():
        assert option.help == fields[name].metadata["help"], name
        assert option.type_descriptor.annotation in CLI_TYPES[hints[name]], name
        assert option.default is None, name  # unset: the config file, else the field's default, decides
        default = fields[name].default
        if isinstance(default, bool):
            assert option.show_default == ("--" if default else "--no-") + name
        else:
            assert option.show_default == (str(default) if default != "" else False), name


def test_a_stage_shows_its_own_help_and_default_where_it_has_its_own():
    base, sft = field_options("base"), field_options("sft")
    assert base["model"].help != sft["model"].help and "tiny model" in base["model"].help
    assert (base["max_steps"].show_default, sft["max_steps"].show_default) == ("300", "100")
    assert field_options("distill")["eval_suites"].show_default == "ifeval,livestream"


@pytest.mark.parametrize(("flag", "hsa"), [(["--no-hsa"], False), (["--hsa"], True), ([], True)])
def test_hsa_is_on_unless_no_hsa_says_otherwise(monkeypatch, tmp_path, flag, hsa):
    import trainer.stages

    seen = []

    def stop(stage, cfg, **kwargs):
        seen.append(cfg)
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer.stages, "run_stage", stop)
    CliRunner().invoke(app, ["train", "rl", "--model", str(tmp_path), "--out", str(tmp_path / "o"), *flag])
    assert [cfg.hsa for cfg in seen] == [hsa]


def test_the_help_says_what_model_and_teacher_take_and_how_to_set_any_field():
    res = CliRunner().invoke(app, ["train", "distill", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "shipped:NAME" in res.output and "--set FIELD=VALUE" in res.output
