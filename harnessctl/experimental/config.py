"""The knobs only the wing's studies use, as subclasses of the core's stage configs: stage 0's
copy rows and copy probe (registered for ``base``: ``train base --set copy_share=0.5``, a study's
``base.``/``copy.`` fields) and stage 2's second teacher and held-out rows (registered for
``distill``: ``train distill --set anchor_teacher=...``, a study's ``distill.``/``anchor.`` fields).

>>> cfg = DistillStudyConfig(out="o", heldout="data/hsa", stop_near_teacher=0.05)
>>> cfg.heldout_rows, cfg.anchor_share
(32, 0.5)
>>> DistillStudyConfig(out="o", stop_near_teacher=0.05)
Traceback (most recent call last):
...
trainer.config.ConfigError: stop_near_teacher needs heldout rows to measure: set heldout=DIR (an SFT dataset folder)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from trainer.base_config import BaseStageConfig
from trainer.config import ConfigError
from trainer.distill_config import DistillStageConfig

from .copy_rows import parse_copy_mix


@dataclass
class BaseStudyConfig(BaseStageConfig):
    """Stage 0 with copy rows in its corpus and the copy probe after it (:mod:`.copy_rows`)."""

    copy_share: float = field(
        default=0.0,
        metadata={
            "help": "Share of corpus rows answered by copying a string drawn for the row (a code, a number) "
            "from the conversation; 0: the corpus without them."
        },
    )
    copy_mix: str = field(
        default="",
        metadata={
            "help": "Shares of the copy rows' kinds as KIND=WEIGHT pairs (echo, lookup, number, tool), "
            "e.g. lookup=2,tool=1; empty: echo=0.5,lookup=0.2,number=0.1,tool=0.2."
        },
    )
    copy_probe: int = field(
        default=30,
        metadata={
            "help": "Prompts per kind of the copy probe after training (echo, lookup, tool argument of a "
            "fresh code; recorded in train.json); 0: none."
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.copy_share <= 1.0:
            raise ConfigError(f"copy_share must be within [0, 1], got {self.copy_share}")
        try:
            parse_copy_mix(self.copy_mix)
        except ValueError as e:
            raise ConfigError(f"copy_mix: {e}") from None
        if self.copy_probe < 0:
            raise ConfigError(f"copy_probe must be 0 (none) or a number of prompts, got {self.copy_probe}")


@dataclass
class DistillStudyConfig(DistillStageConfig):
    """Stage 2 with a second teacher (:mod:`.two_teachers`) and held-out agent rows (:mod:`.heldout`)."""

    anchor_teacher: str = field(
        default="",
        metadata={
            "help": "A second teacher (e.g. the SFT parent) for anchor_prompts, in the same run: each step "
            "distills the general prompts toward teacher and the anchor prompts toward this one. Empty: none."
        },
    )
    anchor_prompts: str = field(
        default="",
        metadata={
            "help": "JSONL of the anchor teacher's prompts (an SFT train.jsonl works: rows cut as prompt_turn says)."
        },
    )
    anchor_share: float = field(
        default=0.5, metadata={"help": "Share of the n_prompts drawn from anchor_prompts (with anchor_teacher)."}
    )
    heldout: str = field(
        default="",
        metadata={
            "help": "Agent rows scored while distilling: an SFT dataset folder (its validation.jsonl) or a "
            ".jsonl file; their assistant-token loss is logged as heldout_loss every heldout_steps (what "
            "distillation costs the agent). Empty: none."
        },
    )
    heldout_rows: int = field(default=32, metadata={"help": "Rows of heldout scored (the first N)."})
    heldout_calls: bool = field(
        default=False,
        metadata={
            "help": "Also log heldout_call_match: the share of the rows' tool-calling turns whose first call "
            "the student makes as the trajectory did (same tool, same skill), greedily."
        },
    )
    heldout_steps: int = field(default=5, metadata={"help": "Score heldout every N steps (and at the start)."})
    stop_near_teacher: float = field(
        default=0.0,
        metadata={
            "help": "With heldout: stop once heldout_loss is at most this share above the teacher's on the "
            "same rows (0.05: within 5 %), or at max_steps; 0: always run max_steps."
        },
    )

    checkpoint_fields: ClassVar[tuple[str, ...]] = ("anchor_teacher",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.heldout_rows < 1 or self.heldout_steps < 1:
            raise ConfigError(
                f"heldout_rows and heldout_steps must be at least 1, got {self.heldout_rows} and {self.heldout_steps}"
            )
        if self.stop_near_teacher < 0:
            raise ConfigError(f"stop_near_teacher must be 0 (off) or a positive share, got {self.stop_near_teacher}")
        if bool(self.anchor_teacher) != bool(self.anchor_prompts):
            raise ConfigError(
                "anchor_teacher and anchor_prompts go together: set both (a second teacher and its prompts) or neither"
            )
        if not 0.0 < self.anchor_share < 1.0:
            raise ConfigError(f"anchor_share must be between 0 and 1 (exclusive), got {self.anchor_share}")
        if self.stop_near_teacher and not self.heldout:
            raise ConfigError(
                "stop_near_teacher needs heldout rows to measure: set heldout=DIR (an SFT dataset folder)"
            )
