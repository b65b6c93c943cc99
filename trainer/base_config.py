"""The config of stage 0 (:mod:`trainer.base`): the fields every stage shares
(:class:`trainer.config.TrainConfig`) and the general corpus's, each with its help text and its check.

>>> BaseStageConfig(out="out/base").rows
3000
>>> BaseStageConfig(out="out/base", rows=5)
Traceback (most recent call last):
...
trainer.config.ConfigError: rows must be at least 10, got 5
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer.config import ConfigError, TrainConfig


@dataclass
class BaseStageConfig(TrainConfig):
    """Stage 0: a base model from scratch on the project's general corpus (instructions, chat, tool use)."""

    model: str = field(
        default="", metadata={"help": "Empty: build the tiny model first; else continue this checkpoint."}
    )
    rows: int = field(default=3000, metadata={"help": "Rows of the generated general corpus."})
    max_length: int = field(default=512, metadata={"help": "Token limit per row (longer rows are refused, not cut)."})
    max_steps: int = field(default=300, metadata={"help": "Optimizer steps to run."})
    learning_rate: float = field(default=3e-3, metadata={"help": "Peak learning rate (from scratch: high)."})
    warmup_steps: int = field(default=30, metadata={"help": "Linear warm-up steps."})
    per_device_batch_size: int = field(default=16, metadata={"help": "Rows per step."})
    # Random batches: length-grouped ones stalled from scratch (docs/studies/full-rerun.md).
    group_by_length: bool = field(
        default=False,
        metadata={"help": "Batch rows of similar length together (less padding; from scratch it trained worse)."},
    )
    # Off: only short rows gain from it (docs/studies/compute.md#padding-free-batches).
    padding_free: bool = field(
        default=False,
        metadata={
            "help": "Join each batch's rows into one sequence without padding, each row attending only to "
            "itself (the same loss, less compute on short rows)."
        },
    )

    stage = "base"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rows < 10:
            raise ConfigError(f"rows must be at least 10, got {self.rows}")
        if self.max_length < 64:
            raise ConfigError(f"max_length must be at least 64 tokens, got {self.max_length}")
