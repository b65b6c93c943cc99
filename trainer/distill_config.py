"""The config of stage 2 (:mod:`trainer.distill`): the fields every stage shares
(:class:`trainer.config.TrainConfig`) and on-policy distillation's, each with its help text and its check.

>>> DistillStageConfig(out="out/distill").beta
1.0
>>> DistillStageConfig(out="o", prompt_turn="last")
Traceback (most recent call last):
...
trainer.config.ConfigError: prompt_turn must be first or any, got 'last'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer.config import ConfigError, TrainConfig


@dataclass
class DistillStageConfig(TrainConfig):
    """Stage 2: general on-policy distillation, reverse KL (beta=1) to the base model as teacher."""

    teacher: str = field(default="", metadata={"help": "Teacher checkpoint: the base model before domain training."})
    prompts: str = field(default="", metadata={"help": "JSONL of general prompts; empty: the project's own."})
    n_prompts: int = field(default=500, metadata={"help": "Prompts drawn from the set."})
    prompt_turn: str = field(
        default="first",
        metadata={
            "help": "Where a --prompts row's messages are cut: first (before the first answer) or any (before "
            "an answer drawn per row: every step of an agent trajectory)."
        },
    )
    beta: float = field(default=1.0, metadata={"help": "0 forward KL, 0.5 JSD, 1 reverse KL (on-policy default)."})
    max_completion_length: int = field(default=96, metadata={"help": "Tokens the student samples per prompt."})
    temperature: float = field(default=1.0, metadata={"help": "Student sampling temperature."})
    learning_rate: float = field(default=1e-4, metadata={"help": "Peak learning rate."})
    eval_suites: str = field(
        default="ifeval,livestream", metadata={"help": "General and domain suites scored before and after."}
    )
    stage = "distill"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.beta <= 1.0:
            raise ConfigError(f"beta must be within [0, 1] (1 = reverse KL), got {self.beta}")
        if self.max_completion_length < 1 or self.n_prompts < 1:
            raise ConfigError("max_completion_length and n_prompts must be at least 1")
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be positive for on-policy sampling, got {self.temperature}")
        if self.prompt_turn not in ("first", "any"):
            raise ConfigError(f"prompt_turn must be first or any, got {self.prompt_turn!r}")
