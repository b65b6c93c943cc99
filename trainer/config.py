"""What every stage's config shares: the fields of :class:`TrainConfig` (the help text in each
field's metadata, checks that say how to fix a bad value), :class:`ConfigError`, and reading
values from a YAML file or the command line. Each stage's own class lives beside its stage
(:mod:`trainer.sft_config` beside :mod:`trainer.sft`, ...); :func:`trainer.stage_configs.load_config`
loads one.

>>> TrainConfig(out="out/x", max_steps=5).learning_rate
0.0005
>>> coerce("max_steps", "20", int), coerce("hsa", "off", bool)
(20, False)
>>> TrainConfig(out="o", precision="fp8")
Traceback (most recent call last):
...
trainer.config.ConfigError: precision must be auto, bf16, fp16 or fp32, got 'fp8'
"""

from __future__ import annotations

import dataclasses
import json
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Union, get_args, get_origin

from harnessctl.errors import HarnessctlError

#: The core's stages, in the order they train.
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


def config_path(name: str | Path) -> Path:
    """A config file by path, or by name among the shipped ones (``tiny-cpu`` -> trainer/configs/tiny-cpu.yaml).

    >>> config_path("tiny-cpu").name
    'tiny-cpu.yaml'
    """
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
    """The values a YAML config file sets for ``stage`` (top level, then the stage's own section).

    >>> read_config_file("rl", "tiny-cpu")["num_generations"]
    4
    """
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
    """``value`` as the field's type; command-line strings become ints, floats, bools or JSON.

    >>> coerce("reward_weights", '{"correctness": 1}', dict[str, float])
    {'correctness': 1.0}
    """
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
