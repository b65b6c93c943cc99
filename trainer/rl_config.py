"""The config of stage 3 (:mod:`trainer.rl`): the fields every stage shares
(:class:`trainer.config.TrainConfig`) and HSA-RL's, each with its help text and its check.

>>> RLStageConfig(out="out/rl").reward_weights == DEFAULT_REWARD_WEIGHTS
True
>>> RLStageConfig(out="o", num_generations=3)
Traceback (most recent call last):
...
trainer.config.ConfigError: per_device_batch_size 4 must be a multiple of num_generations 3: set per_device_batch_size=6
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainer.config import ConfigError, TrainConfig

#: Reward weights per scorer component (one TRL reward function each), before the think penalty.
DEFAULT_REWARD_WEIGHTS = {
    "correctness": 0.4,
    "efficiency": 0.1,
    "tool_rationality": 0.3,
    "skill_selection": 0.2,
}


@dataclass
class RLStageConfig(TrainConfig):
    """Stage 3 (HSA-RL): GRPO over whole episodes in the simulator, a fresh harness variant per prompt group."""

    cases: int = field(default=200, metadata={"help": "Training cases generated for the rollouts."})
    case_seed: int = field(default=7, metadata={"help": "Seed of the training cases (disjoint from eval suites)."})
    num_generations: int = field(default=4, metadata={"help": "Episodes per prompt group (GRPO's group size)."})
    hsa: bool = field(
        default=True,
        metadata={
            "help": "A fresh HSA variant per prompt group; off: every episode under the harness itself (the ablation)."
        },
    )
    hsa_ops: str = field(default="", metadata={"help": "Operator families for the variants (empty: all)."})
    hsa_strength: float = field(default=0.5, metadata={"help": "How much each operator changes, 0..1."})
    fault_rate: float = field(default=0.1, metadata={"help": "Share of tool calls the simulator fails."})
    max_completion_length: int = field(
        default=1024, metadata={"help": "Tokens of a whole episode after its first prompt (model + environment)."}
    )
    max_turn_tokens: int = field(default=96, metadata={"help": "Tokens the policy samples per turn."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of the rollouts."})
    reward_weights: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_REWARD_WEIGHTS), metadata={"help": "Weight per scorer component."}
    )
    think_penalty: float = field(
        default=0.002, metadata={"help": "Reward lost per <think> token beyond the harness's max_think_tokens."}
    )
    beta: float = field(default=0.0, metadata={"help": "KL penalty to the reference model (0: none, no copy kept)."})
    learning_rate: float = field(default=1e-5, metadata={"help": "Peak learning rate."})
    use_vllm: bool = field(
        default=False, metadata={"help": "Reserved: TRL's vLLM generation is not wired to whole-episode rollouts yet."}
    )
    vllm_mode: str = field(default="colocate", metadata={"help": "colocate | server (TRL's vLLM modes)."})

    stage = "rl"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_generations < 2:
            raise ConfigError(
                f"num_generations must be at least 2 (GRPO compares episodes in a group), got {self.num_generations}"
            )
        if self.per_device_batch_size % self.num_generations:
            raise ConfigError(
                f"per_device_batch_size {self.per_device_batch_size} must be a multiple of num_generations "
                f"{self.num_generations}: set per_device_batch_size={self.num_generations * 2}"
            )
        if not 0.0 <= self.fault_rate <= 1.0 or not 0.0 <= self.hsa_strength <= 1.0:
            raise ConfigError("fault_rate and hsa_strength must be within [0, 1]")
        unknown = sorted(set(self.reward_weights) - set(DEFAULT_REWARD_WEIGHTS))
        if unknown:
            raise ConfigError(
                f"reward_weights: unknown component {unknown[0]!r}; use {', '.join(DEFAULT_REWARD_WEIGHTS)}"
            )
        if self.think_penalty < 0:
            raise ConfigError(f"think_penalty must be >= 0, got {self.think_penalty}")
        if self.cases < 1 or self.max_turn_tokens < 1 or self.max_completion_length < self.max_turn_tokens:
            raise ConfigError("cases and max_turn_tokens must be >= 1, and max_completion_length >= max_turn_tokens")
        if self.use_vllm:
            raise ConfigError(
                "use_vllm: whole-episode rollouts sample turn by turn in process; TRL's vLLM path is not wired to "
                "them yet (see docs/train.md). Set use_vllm=false"
            )
        if self.vllm_mode not in ("colocate", "server"):
            raise ConfigError(f"vllm_mode must be colocate or server, got {self.vllm_mode!r}")
