"""Each stage's config class lives beside its stage (``trainer/sft.py`` + ``trainer/sft_config.py``),
:func:`trainer.stage_configs.load_config` returns it, and ``python -m trainer.STAGE`` takes its
options from the class's fields."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

import trainer.config
from trainer.cli import parse, usage
from trainer.config import STAGES, TrainConfig
from trainer.stage_configs import CONFIG_CLASSES, config_class, field_help, load_config


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_config_class_lives_in_its_stages_config_module_and_load_config_returns_it(stage):
    module = importlib.import_module(f"trainer.{stage}_config")
    core = CONFIG_CLASSES[stage]
    assert core.__module__ == module.__name__ and getattr(module, core.__name__) is core
    assert core.stage == stage and issubclass(core, TrainConfig)
    # the stage's own module uses that very class
    assert getattr(importlib.import_module(f"trainer.{stage}"), core.__name__) is core
    cfg = load_config(stage, None, {"out": "o"})
    # the core's class, or the subclass an installed extension registered for the stage
    assert isinstance(cfg, core) and type(cfg) is config_class(stage) and cfg.stage == stage


def test_the_shared_config_module_holds_no_stage_class():
    shared = [v for v in vars(trainer.config).values() if isinstance(v, type) and issubclass(v, TrainConfig)]
    assert shared == [TrainConfig]


@pytest.mark.parametrize("stage", STAGES)
def test_python_m_trainer_takes_every_config_field_as_an_option_with_its_help_and_default(stage):
    text = usage(stage)
    argv: list[str] = []
    for f in dataclasses.fields(config_class(stage)):
        flag = "--" + f.name.replace("_", "-")
        line = next(line for line in text.splitlines() if line.split()[:1] == [flag])
        assert f.metadata["help"] in line, f.name
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        assert line.endswith(f"(default: {default!r})"), f.name
        argv += [flag, "1"]
    _, overrides, _ = parse(stage, argv)
    assert set(overrides) == {name for name, _, _ in field_help(stage)}
