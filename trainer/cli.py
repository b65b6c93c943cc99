"""``python -m trainer.STAGE`` (and ``accelerate launch -m trainer.STAGE``): the same stage as
``harnessctl train STAGE``, for multi-GPU launches.

Every config field is a flag (``--max-steps 10`` or ``--max_steps=10``); ``--config FILE`` (a
path or a shipped name such as ``tiny-cpu``) sets them first. ``--resume`` continues the last
checkpoint under ``--out``; ``--json`` prints the summary as JSON. Exit codes: 0 done, 2 bad
input, 130 interrupted (a resumable checkpoint was written).

>>> main("sft", ["--config", "tiny-cpu", "--model", "m", "--data", "d", "--out", "o"])   # doctest: +SKIP
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from trainer.common import TrainError, TrainResult
from trainer.config import ConfigError
from trainer.stage_configs import field_help, load_config

#: Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def parse(stage: str, argv: list[str]) -> tuple[str | None, dict[str, Any], dict[str, bool]]:
    """``(config file, field overrides, flags)`` from ``--name value`` / ``--name=value`` arguments."""
    fields = {name for name, _, _ in field_help(stage)}
    flags = {"resume": False, "json": False, "no_progress": False}
    config: str | None = None
    overrides: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            raise ConfigError(f"unexpected argument {arg!r}: options are --name value (see --help)")
        name, eq, value = arg[2:].partition("=")
        key = name.replace("-", "_")
        if key in flags:
            flags[key] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                raise ConfigError(f"--{name} needs a value")
            value = argv[i + 1]
            i += 1
        i += 1
        if key == "config":
            config = value
        elif key in fields:
            overrides[key] = value
        else:
            raise ConfigError(f"unknown option --{name}; {stage} fields are {', '.join(sorted(fields))}")
    return config, overrides, flags


def usage(stage: str) -> str:
    lines = [f"usage: python -m trainer.{stage} [--config FILE] [--resume] [--json] [--FIELD VALUE ...]", ""]
    lines += [
        f"  --{name.replace('_', '-'):28} {text} (default: {default!r})" for name, text, default in field_help(stage)
    ]
    return "\n".join(lines)


def main(stage: str, train: Callable[..., TrainResult], argv: list[str] | None = None) -> None:
    """Parse, run the stage (``train``: its ``train_<stage>`` function, handed in by the stage's
    module so that this one imports none of them), print the summary; exits with the code above.

    >>> main("sft", train_sft, ["--config", "tiny-cpu", "--data", "out/datasets/livecommerce"])   # doctest: +SKIP
    """

    argv = sys.argv[1:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        print(usage(stage))
        raise SystemExit(0)
    try:
        config, overrides, flags = parse(stage, argv)
        cfg = load_config(stage, config, overrides)
        result = train(cfg, resume=flags["resume"], progress=not flags["no_progress"] and not flags["json"])
    except (ConfigError, TrainError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    summary = result.to_dict()
    summary.pop("log", None)
    if flags["json"]:
        print(json.dumps(summary, default=str))
    else:
        print(
            f"{stage}: {result.steps} steps in {result.seconds:.1f} s "
            f"({result.tokens_per_s:.0f} tokens/s) -> {result.out}"
        )
    if result.interrupted:
        print(f"interrupted: resume with --resume (checkpoint {result.checkpoint})", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED)
