"""The stages by name: what ``harnessctl train STAGE`` and ``python -m trainer.STAGE`` call.

>>> run_stage("sft", load_config("sft", "tiny-cpu", {...}))      # doctest: +SKIP
"""

from __future__ import annotations

from trainer.common import TrainResult
from trainer.config import TrainConfig


def run_stage(stage: str, cfg: TrainConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Runs one stage (imports its module only now: TRL and torch load on demand)."""
    if stage == "base":
        from trainer.base import train_base as run
    elif stage == "sft":
        from trainer.sft import train_sft as run
    elif stage == "distill":
        from trainer.distill import train_distill as run
    elif stage == "rl":
        from trainer.rl import train_rl as run
    else:
        raise ValueError(f"unknown stage {stage!r}")
    return run(cfg, resume=resume, progress=progress)  # type: ignore[arg-type]
