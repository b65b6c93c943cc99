"""The config class of each stage, and a stage's config loaded from three layers, later ones
winning: the dataclass defaults, a YAML file (top-level keys apply to every stage, a section
named after the stage to that stage only), and ``key=value`` overrides from the command line.

Each stage's class lives beside its stage (:mod:`trainer.sft_config` beside :mod:`trainer.sft`,
and so on); the fields they share, the errors and the value conversions are :mod:`trainer.config`'s.

>>> cfg = load_config("sft", None, {"out": "out/sft", "data": "out/datasets/x", "max_steps": "5"})
>>> cfg.max_steps, cfg.learning_rate
(5, 0.0005)
>>> type(cfg).__module__
'trainer.sft_config'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, get_type_hints

from harnessctl.extensions import load_extensions
from trainer.base_config import BaseStageConfig
from trainer.config import STAGES, ConfigError, TrainConfig, coerce, config_path, read_config_file
from trainer.distill_config import DistillStageConfig
from trainer.rl_config import RLStageConfig
from trainer.sft_config import SFTStageConfig

#: The core's config class of each stage (:func:`config_class` gives the one in use).
CONFIG_CLASSES: dict[str, type[TrainConfig]] = {
    "base": BaseStageConfig,
    "sft": SFTStageConfig,
    "distill": DistillStageConfig,
    "rl": RLStageConfig,
}
_EXTENDED: dict[str, type[TrainConfig]] = {}


def register_config(stage: str, cls: type[TrainConfig]) -> None:
    """Make ``cls`` the config of ``stage``: an extension's subclass of the class in use, adding
    fields (with their checks in its ``__post_init__``) that the stage's hooks read. A subclass of
    a subclass composes; any other class is refused, so that no registered field is lost.

    >>> register_config("distill", MyDistillConfig)  # a dataclass subclass of config_class("distill")  # doctest: +SKIP
    >>> register_config("distill", SFTStageConfig)
    Traceback (most recent call last):
    ...
    TypeError: SFTStageConfig must subclass ..., the distill config in use
    """
    current = config_class(stage)
    if not issubclass(cls, current):
        raise TypeError(f"{cls.__name__} must subclass {current.__name__}, the {stage} config in use")
    _EXTENDED[stage] = cls


def config_class(stage: str) -> type[TrainConfig]:
    """The config class of ``stage``: the core's, or the subclass an extension registered.

    >>> issubclass(config_class("distill"), DistillStageConfig)
    True
    """
    load_extensions()
    return _EXTENDED.get(stage) or CONFIG_CLASSES[stage]


def load_config(stage: str, path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The stage's config: defaults < YAML file < overrides (strings are converted to the field's type).

    >>> load_config("rl", "tiny-cpu", {"out": "out/rl", "num_generations": "2"}).num_generations
    2
    >>> load_config("sft", None, {"epochs": "3"})
    Traceback (most recent call last):
    ...
    trainer.config.ConfigError: --set epochs: unknown sft field (fields: ...)
    """
    if stage not in CONFIG_CLASSES:
        raise ConfigError(f"unknown stage {stage!r}: choose {', '.join(STAGES)}")
    cls = config_class(stage)
    values = read_config_file(stage, path) if path else {}
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    hints = get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    from_cli = set(overrides or {})
    for key in list(values):
        if key not in known:
            where = f"--set {key}" if key in from_cli else f"{config_path(path)}: {key}" if path else key
            raise ConfigError(f"{where}: unknown {stage} field (fields: {', '.join(sorted(known))})")
        values[key] = coerce(key, values[key], hints[key])
    try:
        return cls(**values)
    except TypeError as e:  # a value of the wrong shape for its field
        raise ConfigError(f"{stage} config: {e}") from None


def field_help(stage: str) -> list[tuple[str, str, Any]]:
    """``(name, help, default)`` of every field of the stage's config (for --help and docs).

    >>> field_help("sft")[0]
    ('out', 'Output folder: checkpoints, the final model and train.json.', '')
    """
    cls = config_class(stage)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append((f.name, f.metadata.get("help", ""), default))
    return out
