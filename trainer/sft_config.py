"""The config of stage 1 (:mod:`trainer.sft`): the fields every stage shares
(:class:`trainer.config.TrainConfig`) and HSA-SFT's, each with its help text and its check.

>>> SFTStageConfig(out="out/sft", data="out/datasets/x").max_truncated_share
0.02
>>> SFTStageConfig(out="o", data="d", max_truncated_share=2.0)
Traceback (most recent call last):
...
trainer.config.ConfigError: max_truncated_share must be within [0, 1], got 2.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer.config import ConfigError, TrainConfig


@dataclass
class SFTStageConfig(TrainConfig):
    """Stage 1 (HSA-SFT): supervised fine-tuning on `augment --trajectories` rows, loss on the assistant only."""

    data: str = field(default="", metadata={"help": "Dataset folder from `harnessctl augment --trajectories`."})
    split: str = field(default="train", metadata={"help": "Which file of the folder: train or validation."})
    max_length: int = field(default=0, metadata={"help": "Token limit per row; 0 sizes it from the data."})
    max_truncated_share: float = field(
        default=0.02, metadata={"help": "Refuse to train when more than this share of rows would be cut."}
    )
    packing: bool = field(default=False, metadata={"help": "Pack rows into full sequences (slower on CPU)."})
    group_by_length: bool = field(
        default=True,
        metadata={"help": "Batch rows of similar length together (less padding: trajectories vary 600-1,600 tokens)."},
    )
    heldout_rows: int = field(
        default=64,
        metadata={
            "help": "Rows of the dataset's validation split scored every heldout_steps (0: none): training "
            "loss falling while this one rises means the model learns the rows by heart."
        },
    )
    heldout_steps: int = field(default=0, metadata={"help": "Score the held-out rows every N steps; 0: save_steps."})
    viewers_per_row: int = field(
        default=1,
        metadata={
            "help": "Join up to N rows answered under the same harness into one chat (the harness is read once "
            "per N skill choices); held-out rows stay single."
        },
    )
    decision_rows: float = field(
        default=0.0,
        metadata={
            "help": "Share of rows also trained cut after their first assistant turn (the skill choice the "
            "episode follows), so that choice weighs more in the loss; above 1, copies per row (up to 8); 0: none."
        },
    )
    decision_viewers: int = field(
        default=0,
        metadata={
            "help": "Join up to N of those cut rows under the same harness into one chat (N choices for one "
            "reading of the harness); 0: viewers_per_row."
        },
    )
    decision_balance: bool = field(
        default=False,
        metadata={
            "help": "Join the cut rows so that, under each harness, every first call is equally frequent and "
            "no decision chat repeats one (the viewer's words, not the commonest skill, tell the line)."
        },
    )

    stage = "sft"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.max_truncated_share <= 1.0:
            raise ConfigError(f"max_truncated_share must be within [0, 1], got {self.max_truncated_share}")
        if self.split not in ("train", "validation"):
            raise ConfigError(f"split must be train or validation, got {self.split!r}")
        if self.max_length < 0:
            raise ConfigError(f"max_length must be 0 (sized from the data) or positive, got {self.max_length}")
        if self.viewers_per_row < 1:
            raise ConfigError(f"viewers_per_row must be 1 or more, got {self.viewers_per_row}")
        if self.decision_viewers < 0:
            raise ConfigError(f"decision_viewers must be 0 (viewers_per_row) or more, got {self.decision_viewers}")
        if not 0.0 <= self.decision_rows <= 8.0:
            raise ConfigError(f"decision_rows must be within [0, 8], got {self.decision_rows}")
        if self.heldout_rows < 0 or self.heldout_steps < 0:
            raise ConfigError(
                f"heldout_rows and heldout_steps must be 0 or positive, got {self.heldout_rows} and {self.heldout_steps}"
            )
