"""The stages by name: what ``harnessctl train STAGE`` and ``python -m trainer.STAGE`` call.

>>> run_stage("sft", load_config("sft", "tiny-cpu", {...}))      # doctest: +SKIP
>>> sorted(STAGE_FUNCTIONS)
['base', 'distill', 'rl', 'sft']
"""

from __future__ import annotations

from collections.abc import Callable

from trainer.base import train_base
from trainer.common import TrainResult
from trainer.config import TrainConfig
from trainer.distill import train_distill
from trainer.rl import train_rl
from trainer.sft import train_sft

#: Each stage's function (its module imports TRL and torch only when it runs).
STAGE_FUNCTIONS: dict[str, Callable[..., TrainResult]] = {
    "base": train_base,
    "sft": train_sft,
    "distill": train_distill,
    "rl": train_rl,
}


def run_stage(stage: str, cfg: TrainConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Runs one stage (TRL and torch load now, not when this module is imported)."""
    run = STAGE_FUNCTIONS.get(stage)
    if run is None:
        raise ValueError(f"unknown stage {stage!r}")
    return run(cfg, resume=resume, progress=progress)
