"""One config dataclass per HAT stage, with the help text in field metadata and checks that say
how to fix a bad value.

A config comes from three layers, later ones winning: the dataclass defaults, a YAML file
(top-level keys apply to every stage, a section named after the stage to that stage only), and
``key=value`` overrides from the command line (:func:`load_config`).

>>> cfg = load_config("sft", None, {"out": "out/sft", "data": "out/datasets/x", "max_steps": "5"})
>>> cfg.max_steps, cfg.learning_rate
(5, 0.0005)
>>> SFTStageConfig(out="o", data="d", max_truncated_share=2.0)
Traceback (most recent call last):
...
trainer.config.ConfigError: max_truncated_share must be within [0, 1], got 2.0
"""

from __future__ import annotations

import dataclasses
import json
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from harnessctl.errors import HarnessctlError

STAGES = ("base", "sft", "distill", "rl")
CONFIG_DIR = Path(__file__).resolve().parent / "configs"


class ConfigError(HarnessctlError, ValueError):
    """A config value or file is wrong; the message names it and says what to change."""


@dataclass
class TrainConfig:
    """What every stage shares: where to write, what to start from, the optimiser and the schedule."""

    out: str = field(default="", metadata={"help": "Output folder: checkpoints, the final model and train.json."})
    model: str = field(
        default="",
        metadata={
            "help": "Starting checkpoint: a save_pretrained folder, an adapter folder a stage wrote, or empty "
            "to start from `base`."
        },
    )
    base: str = field(
        default="",
        metadata={
            "help": "Pretrained base LoRA adapters train on: a known base (smollm2-135m, fetched by `harnessctl "
            "model fetch`), a Hugging Face folder or hub id; empty: --model is a whole checkpoint."
        },
    )
    seed: int = field(default=0, metadata={"help": "Seed of data order, sampling and initialisation."})
    max_steps: int = field(default=100, metadata={"help": "Optimizer steps to run."})
    learning_rate: float = field(default=5e-4, metadata={"help": "Peak learning rate."})
    lr_scheduler_type: str = field(default="cosine", metadata={"help": "transformers scheduler name."})
    warmup_steps: int = field(default=0, metadata={"help": "Linear warm-up steps."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay."})
    per_device_batch_size: int = field(default=4, metadata={"help": "Sequences (or prompts x generations) per step."})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "Micro-batches per optimizer step."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm."})
    logging_steps: int = field(default=1, metadata={"help": "Log metrics every N steps."})
    save_steps: int = field(default=50, metadata={"help": "Write a resumable checkpoint every N steps."})
    save_total_limit: int = field(default=2, metadata={"help": "Checkpoints kept (oldest removed first)."})
    precision: str = field(default="auto", metadata={"help": "auto | bf16 | fp16 | fp32 (auto: bf16 where supported)."})
    device: str = field(default="auto", metadata={"help": "auto | cpu | cuda (auto: cuda when present)."})
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Trade compute for memory (GPU, big models)."}
    )
    lora_r: int = field(default=0, metadata={"help": "LoRA rank; 0 trains every weight."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling."})
    lora_target_modules: str = field(default="all-linear", metadata={"help": "Modules LoRA wraps."})
    lora_layers: str = field(
        default="",
        metadata={
            "help": "Decoder layers LoRA wraps, e.g. 10-29 or 0,5,9; empty: all. On a CPU the top layers only "
            "(backward stops early) train about twice as fast."
        },
    )
    harness: str = field(default="harnesses/livecommerce", metadata={"help": "Harness folder (RL episodes, eval)."})
    eval_suites: str = field(default="", metadata={"help": "Suites to evaluate at the end, comma-separated."})
    eval_limit: int = field(default=20, metadata={"help": "Cases per suite in the final evaluation."})
    eval_max_tokens: int = field(default=128, metadata={"help": "Tokens per turn in the final evaluation."})
    report_to: str = field(default="none", metadata={"help": "transformers loggers (none, tensorboard, wandb...)."})
    num_threads: int = field(default=0, metadata={"help": "torch CPU threads; 0 leaves torch's default."})

    stage = ""
    #: Fields naming a checkpoint, resolved like ``--model`` (``local:PATH``, ``shipped:NAME``) by
    #: the command line; an extension's config adds its own.
    checkpoint_fields: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for name in (
            "max_steps",
            "per_device_batch_size",
            "gradient_accumulation_steps",
            "logging_steps",
            "save_steps",
        ):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.precision not in ("auto", "bf16", "fp16", "fp32"):
            raise ConfigError(f"precision must be auto, bf16, fp16 or fp32, got {self.precision!r}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.lora_r < 0:
            raise ConfigError(f"lora_r must be 0 (full fine-tuning) or a positive rank, got {self.lora_r}")
        if self.lora_layers:
            try:
                parse_layers(self.lora_layers)
            except ValueError as e:
                raise ConfigError(f"lora_layers: {e}") from None
        if self.eval_limit < 1:
            raise ConfigError(f"eval_limit must be at least 1, got {self.eval_limit}")
        suites = [s for s in self.eval_suites.split(",") if s.strip()]
        known = ("livestream", "variant", "robustness", "ifeval")
        bad = [s for s in suites if s.strip() not in known]
        if bad:
            raise ConfigError(f"eval_suites: unknown suite {bad[0]!r}; choose from {', '.join(known)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


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
    hsa: bool = field(default=True, metadata={"help": "A fresh HSA variant per prompt group; False: the harness."})
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
    a subclass composes; any other class is refused, so that no registered field is lost."""
    current = config_class(stage)
    if not issubclass(cls, current):
        raise TypeError(f"{cls.__name__} must subclass {current.__name__}, the {stage} config in use")
    _EXTENDED[stage] = cls


def config_class(stage: str) -> type[TrainConfig]:
    """The config class of ``stage``: the core's, or the subclass an extension registered.

    >>> issubclass(config_class("distill"), DistillStageConfig)
    True
    """
    from harnessctl.extensions import load_extensions

    load_extensions()
    return _EXTENDED.get(stage) or CONFIG_CLASSES[stage]


def config_path(name: str | Path) -> Path:
    """A config file by path, or by name among the shipped ones (``tiny-cpu`` -> trainer/configs/tiny-cpu.yaml)."""
    p = Path(name)
    if p.is_file():
        return p
    shipped = CONFIG_DIR / (p.name if p.suffix else f"{p.name}.yaml")
    if shipped.is_file():
        return shipped
    names = ", ".join(sorted(f.stem for f in CONFIG_DIR.glob("*.yaml")))
    raise ConfigError(f"{name}: no such config file (shipped configs: {names})")


def parse_layers(text: str) -> list[int]:
    """Layer indices from ``10-29`` or ``0,5,9`` (ranges inclusive, mixed freely).

    >>> parse_layers("0,2-4")
    [0, 2, 3, 4]
    """
    layers: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.strip().isdigit() or (sep and not hi.strip().isdigit()):
            raise ValueError(f"expected layer numbers such as 10-29 or 0,5,9, got {text!r}")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"range {part!r} runs backwards")
        layers.extend(range(first, last + 1))
    if not layers:
        raise ValueError(f"no layers in {text!r}")
    return sorted(set(layers))


def read_config_file(stage: str, path: str | Path) -> dict[str, Any]:
    """The values a YAML config file sets for ``stage`` (top level, then the stage's own section)."""
    from ruamel.yaml import YAML, YAMLError

    p = config_path(path)
    try:
        doc = YAML(typ="safe").load(p.read_text(encoding="utf-8")) or {}
    except YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: a config file is a mapping of field: value")
    # ``base`` is both a field (the pretrained base, a string) and stage 0's section (a mapping)
    values = {
        k: v
        for k, v in doc.items()
        if k != "accelerate" and (k not in STAGES or (k == "base" and not isinstance(v, dict)))
    }
    section = doc.get(stage) or {}
    if stage == "base" and not isinstance(section, dict):
        section = {}
    if not isinstance(section, dict):
        raise ConfigError(f"{p}: section {stage!r} must be a mapping of field: value")
    values.update(section)
    return values


def load_config(stage: str, path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The stage's config: defaults < YAML file < overrides (strings are converted to the field's type)."""
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


def parse_set(item: str, *, form: str = "FIELD=VALUE", example: str = "learning_rate=1e-4") -> tuple[str, str]:
    """One ``--set`` item as ``(field, value)``: the field stripped, the value as written (converted
    to the field's type later, by :func:`coerce`). A :class:`ConfigError` says how to write one
    (``form``, ``example``) when it has no ``=`` or no field.

    >>> parse_set("max_steps= 20"), parse_set("sft.max_steps=2")
    (('max_steps', ' 20'), ('sft.max_steps', '2'))
    >>> parse_set("max_steps")
    Traceback (most recent call last):
    ...
    trainer.config.ConfigError: --set 'max_steps': write FIELD=VALUE, e.g. --set learning_rate=1e-4
    """
    key, eq, value = item.partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"--set {item!r}: write {form}, e.g. --set {example}")
    return key.strip(), value


def coerce(name: str, value: Any, hint: Any) -> Any:
    """``value`` as the field's type; command-line strings become ints, floats, bools or JSON."""
    base = _plain_type(hint)
    if base is dict:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise ConfigError(
                    f"{name}: expected a JSON object such as '{{\"correctness\": 0.5}}', got {value!r}"
                ) from None
        if not isinstance(value, dict):
            raise ConfigError(f"{name}: expected a mapping, got {value!r}")
        return {str(k): float(v) for k, v in value.items()}
    if base is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}: expected true or false, got {value!r}")
    if base in (int, float):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: expected a number, got {value!r}") from None
        if base is int:
            if number != int(number):
                raise ConfigError(f"{name}: expected a whole number, got {value!r}")
            return int(number)
        return number
    return "" if value is None else str(value)


def _plain_type(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        return _plain_type(args[0]) if args else str
    return origin or hint


def field_help(stage: str) -> list[tuple[str, str, Any]]:
    """``(name, help, default)`` of every field of the stage's config (for --help and docs)."""
    cls = config_class(stage)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append((f.name, f.metadata.get("help", ""), default))
    return out
