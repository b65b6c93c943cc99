"""What a stage cannot start without, all said at once and before torch is imported.

A stage's own checks (:func:`trainer.common.check_checkpoint`, ``prepare_out``) name one missing
input at a time, after the heavy imports; the command line asks this module first so that a
person sees every missing option in one message, in a fraction of a second.

>>> from trainer.stage_configs import load_config
>>> missing_inputs("rl", load_config("rl", None, {}))
['--out DIR', '--model CHECKPOINT']
"""

from __future__ import annotations

from typing import Any

from trainer.config import ConfigError

#: What ``--model`` accepts, as a person should read it in a message.
MODEL_FORMS = (
    "a folder a stage or `harnessctl model init` wrote, local:PATH, or shipped:NAME (e.g. shipped:hat); "
    "or a pretrained base with --set base=smollm2-135m"
)


def missing_inputs(stage: str, cfg: Any) -> list[str]:
    """The options ``stage`` needs that ``cfg`` leaves empty, as flags with their placeholder."""
    missing = [] if cfg.out else ["--out DIR"]
    if stage == "sft" and not getattr(cfg, "data", ""):
        missing.append("--data DIR")
    if stage != "base" and not cfg.model and not cfg.base:
        missing.append("--model CHECKPOINT")
    return missing


def check_inputs(stage: str, cfg: Any) -> None:
    """Raise one :class:`ConfigError` naming every missing option and what each accepts.

    >>> from trainer.stage_configs import load_config
    >>> check_inputs("sft", load_config("sft", None, {"model": "m"}))
    Traceback (most recent call last):
    ...
    trainer.config.ConfigError: train sft needs --out DIR and --data DIR (--data: a dataset folder from `harnessctl augment --trajectories N --out DIR`)
    """
    missing = missing_inputs(stage, cfg)
    if not missing:
        return
    what = {
        "--data DIR": "--data: a dataset folder from `harnessctl augment --trajectories N --out DIR`",
        "--model CHECKPOINT": f"--model: {MODEL_FORMS}",
    }
    notes = "; ".join(what[m] for m in missing if m in what)
    listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    raise ConfigError(f"train {stage} needs {listed}" + (f" ({notes})" if notes else ""))
