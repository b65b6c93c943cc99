"""What every stage does around TRL's trainer: devices and precision, seeds, LoRA, checkpoints and
``--resume``, Ctrl-C, progress, the ``train.json`` manifest, the summary and the final evaluation.

A stage module builds its TRL trainer and hands it to :func:`run_trainer`:

>>> result = run_trainer(trainer, cfg, parent=cfg.model, data_hash=h)   # doctest: +SKIP
>>> result.out, result.steps, result.interrupted                       # doctest: +SKIP
('out/sft', 40, False)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError
from harnessctl.eval.runner import EvalConfig, run_eval
from harnessctl.harness.fileio import atomic_write
from harnessctl.models.adapters import (
    ADAPTER_WEIGHTS,
    adapter_base,
    base_entry,
    is_adapter,
    load_adapter_model,
    save_adapter,
)
from harnessctl.models.bases import KNOWN_BASES, BaseError, base_name_of, read_base_record, resolve_base
from harnessctl.progress import progress_bars
from trainer.config import TrainConfig, parse_layers

MANIFEST = "train.json"
#: The logged metrics a learning curve keeps (training loss, held-out losses and first-call
#: match, GRPO reward), in the order a curve's points list them.
CURVE_KEYS = ("loss", "eval_loss", "heldout_loss", "heldout_call_match", "reward")
MANIFEST_VERSION = 1
_PACKAGES = ("harnessctl", "torch", "transformers", "trl", "accelerate", "peft", "datasets", "tokenizers")


class TrainError(HarnessctlError, ValueError):
    """Bad input to a stage (a dataset, a model folder, a config value): the message names it and
    says what to do. The command line prints it and exits 2."""


@dataclass
class TrainResult:
    """What a stage run did (``--json`` prints it)."""

    stage: str
    out: str
    steps: int
    #: Wall seconds of this invocation (a resumed run: since the resume).
    seconds: float
    tokens: int
    tokens_per_s: float
    #: Wall seconds over every invocation that trained this model, resumes included: the compute
    #: a study reports for it.
    total_seconds: float = 0.0
    #: CPU time of this process during training (on a shared machine, steadier than wall time).
    cpu_seconds: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    resumed_from: str | None = None
    checkpoint: str | None = None
    log: list[dict[str, float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] = field(default_factory=dict)
    #: Where it ran (:func:`hardware`): device, processor, threads, the precision resolved.
    hardware: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- inputs ---------------------------------------------------------------------------------------


def check_checkpoint(path: str | Path, what: str = "--model", *, base: str = "") -> Path | None:
    """``path`` as a loadable checkpoint folder (a whole model or an adapter a stage wrote), or a
    :class:`TrainError` saying what is missing. An empty ``path`` with a ``base`` starts from the
    base (None is returned; :func:`load_model` resolves it).

    >>> check_checkpoint("README.md")
    Traceback (most recent call last):
    ...
    trainer.common.TrainError: --model README.md: not a folder; pass a checkpoint folder (config.json, weights, tokenizer)
    """
    if not str(path):
        if base:
            return None
        raise TrainError(
            f"{what}: no checkpoint given; pass a folder written by a stage or `harnessctl model init`, "
            "or name a pretrained base with --set base=smollm2-135m"
        )
    if str(path) in KNOWN_BASES:
        return None
    p = Path(str(path).removeprefix("local:")).expanduser()
    if not p.exists():
        raise TrainError(f"{what} {path}: no such folder")
    if not p.is_dir():
        raise TrainError(f"{what} {path}: not a folder; pass a checkpoint folder (config.json, weights, tokenizer)")
    if is_adapter(p):
        if not (p / ADAPTER_WEIGHTS).is_file():
            raise TrainError(f"{what} {path}: an adapter without its weights ({ADAPTER_WEIGHTS}); retrain or copy it")
        return p
    missing = [n for n in ("config.json",) if not (p / n).is_file()]
    if not any(p.glob("*.safetensors")) and not any(p.glob("pytorch_model*.bin")):
        missing.append("model weights (*.safetensors)")
    if not (p / "tokenizer_config.json").is_file() and not (p / "tokenizer.json").is_file():
        missing.append("a tokenizer (tokenizer.json)")
    if missing:
        raise TrainError(
            f"{what} {path}: not a checkpoint (missing {', '.join(missing)}); pass a save_pretrained() folder "
            "such as `harnessctl model init --out DIR` writes"
        )
    return p


def start_base(path: str | Path, cfg: TrainConfig) -> dict[str, Any] | None:
    """The pretrained base a stage's model grows from, as ``train.json``'s ``base`` entry: the
    base an adapter names, the base ``--model`` names (a known base), or ``cfg.base`` when
    ``--model`` is empty; None for a whole checkpoint (the tiny model)."""
    spec = str(path or "")
    if spec and spec not in KNOWN_BASES:
        folder = Path(spec.removeprefix("local:")).expanduser()
        if is_adapter(folder):
            return adapter_base(folder)
        if read_base_record(folder):  # a converted base named by its folder
            # by its known name where it has one (found again on another machine); else by its path
            known = base_name_of(folder)
            return base_entry(known if known in KNOWN_BASES else str(folder.resolve()), folder.resolve())
        return None
    name = spec or cfg.base
    if not name:
        return None
    try:
        return base_entry(name, resolve_base(name))
    except BaseError as e:
        raise TrainError(str(e)) from None


def file_hash(*paths: str | Path) -> str:
    """sha256 over files (or every file under folders), in name order: the manifest's data hash."""
    digest = hashlib.sha256()
    for root in paths:
        root = Path(root)
        files = sorted(f for f in root.rglob("*") if f.is_file()) if root.is_dir() else [root]
        for f in files:
            digest.update(f.name.encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- devices, precision, seeds --------------------------------------------------------------------


def setup(cfg: TrainConfig) -> None:
    """Threads and seeds before anything is built."""
    import torch
    from transformers import set_seed

    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    set_seed(cfg.seed)
    quiet()


def quiet() -> None:
    """Progress is ours (rich, one bar): silence the libraries' own bars and info logs."""
    import warnings

    import datasets
    import transformers

    warnings.filterwarnings("ignore", message=r".*(gradient_checkpointing|is_gradient_checkpointing)` is deprecated")
    datasets.disable_progress_bars()
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def on_cpu(cfg: TrainConfig) -> bool:
    import torch

    return cfg.device == "cpu" or (cfg.device == "auto" and not torch.cuda.is_available())


def precision(cfg: TrainConfig) -> str:
    """``bf16``, ``fp16`` or ``fp32``. auto: bf16 on a GPU that has it, and on a CPU whose
    instructions support it (measured ~20 % faster there); fp32 otherwise."""
    import torch

    if cfg.precision != "auto":
        return cfg.precision
    if on_cpu(cfg):
        supported = getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)()
        amx = getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
        return "bf16" if supported or amx else "fp32"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def hardware(cfg: TrainConfig) -> dict[str, Any]:
    """What a stage ran on, for its manifest: step times differ by 2x between CPUs (one with bf16
    instructions, one without), so a time read without this cannot be compared.

    >>> sorted(hardware(TrainConfig(device="cpu", precision="fp32")))
    ['device', 'precision', 'processor', 'threads']
    """
    import torch

    if on_cpu(cfg):
        device = "cpu"
    else:
        device = f"cuda: {torch.cuda.get_device_name(0)}"
    return {
        "device": device,
        "processor": processor_name(),
        "threads": torch.get_num_threads(),
        "precision": precision(cfg),
    }


def hardware_text(hw: dict[str, Any]) -> str:
    """:func:`hardware`'s record in words, as summaries and reports print it.

    >>> hardware_text({"device": "cpu", "processor": "AMD EPYC", "threads": 2, "precision": "fp32"})
    'cpu (AMD EPYC), 2 threads, fp32'
    """
    return f"{hw.get('device')} ({hw.get('processor')}), {hw.get('threads')} threads, {hw.get('precision')}"


def processor_name() -> str:
    """The CPU's model name (Linux: ``/proc/cpuinfo``), else what ``platform`` knows."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def training_arguments(cfg: TrainConfig) -> dict[str, Any]:
    """The keyword arguments every TRL config of a stage shares."""
    prec = precision(cfg)
    return {
        "output_dir": cfg.out,
        "max_steps": cfg.max_steps,
        "learning_rate": cfg.learning_rate,
        "lr_scheduler_type": cfg.lr_scheduler_type,
        "warmup_steps": cfg.warmup_steps,
        "weight_decay": cfg.weight_decay,
        "per_device_train_batch_size": cfg.per_device_batch_size,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "max_grad_norm": cfg.max_grad_norm,
        "logging_steps": cfg.logging_steps,
        "save_strategy": "steps",
        "save_steps": cfg.save_steps,
        "save_total_limit": cfg.save_total_limit,
        "bf16": prec == "bf16",
        "fp16": prec == "fp16",
        "use_cpu": on_cpu(cfg),
        "gradient_checkpointing": cfg.gradient_checkpointing,
        "report_to": [r for r in cfg.report_to.split(",") if r and r != "none"] or "none",
        "seed": cfg.seed,
        "data_seed": cfg.seed,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }


def peft_config(cfg: TrainConfig, model: Any = None) -> Any:
    """A LoRA config when ``lora_r`` > 0, else None; None too when ``model`` already carries its
    adapter (a stage continuing another's adapter trains that one)."""
    if not cfg.lora_r or is_peft_model(model):
        return None
    from peft import LoraConfig

    targets: Any = cfg.lora_target_modules
    if targets != "all-linear":
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    layers = parse_layers(cfg.lora_layers) if cfg.lora_layers else None
    if layers is not None and targets == "all-linear":
        # peft takes a layer selection only with the modules named
        targets = linear_module_names(model)
    return LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        target_modules=targets,
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def linear_module_names(model: Any) -> list[str]:
    """The names of the linear modules inside a model's decoder layers (``q_proj``, ``down_proj``, …),
    what ``all-linear`` means to peft."""
    import torch

    if model is None:
        return ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    names = {
        name.rsplit(".", 1)[-1]
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and ".layers." in f".{name}"
    }
    return sorted(names)


def is_peft_model(model: Any) -> bool:
    return model is not None and hasattr(model, "peft_config") and hasattr(model, "merge_and_unload")


def load_model(
    path: str | Path, cfg: TrainConfig, what: str = "--model", *, drop_padding_mask: bool = True
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a checkpoint folder, in float32 (mixed precision runs under autocast),
    running right-padded batches without their padding mask (:func:`drop_right_padding_mask`)
    unless ``drop_padding_mask`` is False (a baseline to measure that against)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = check_checkpoint(path, what, base=cfg.base if what == "--model" else "")
    try:
        if p is not None and is_adapter(p):
            # the student trains its adapter on; a teacher runs merged
            model, tokenizer = load_adapter_model(p, dtype="float32", merge=True, trainable=what == "--model")
        else:
            folder = p if p is not None else resolve_base(str(path) or cfg.base)
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype="float32")
    except BaseError as e:
        raise TrainError(str(e)) from None
    except (OSError, ValueError) as e:
        raise TrainError(f"{what} {path}: cannot load the checkpoint: {str(e).splitlines()[0][:300]}") from None
    if not tokenizer.chat_template:
        raise TrainError(f"{what} {path}: the tokenizer has no chat template; the stages train on chats")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if drop_padding_mask:
        drop_right_padding_mask(model)
    return model, tokenizer


def remaining_estimate(elapsed_s: float, steps_done: int, steps_left: int) -> str:
    """``", about N min left"`` at the rate of the steps done so far ("" before the first or after the last).

    >>> remaining_estimate(300.0, 5, 95), remaining_estimate(30.0, 3, 0), remaining_estimate(9.0, 3, 20)
    (', about 95 min left', '', ', about 60 s left')
    """
    if steps_done < 1 or steps_left < 1:
        return ""
    left = elapsed_s / steps_done * steps_left
    return f", about {left / 60:.0f} min left" if left >= 90 else f", about {left:.0f} s left"


def drop_right_padding_mask(model: Any) -> Any:
    """Let ``model`` run right-padded batches without their padding mask; returns the hook's handle.

    Why: under causal attention a token only attends to the tokens before it, and in a right-padded
    row those are all real, so the padding mask changes nothing a loss reads (the pad positions'
    outputs carry no label). Given the mask, though, attention takes its masked path over every
    block; without it, its causal path skips the blocks above the diagonal. On the tiny model's
    trajectory rows (about 1,200 tokens, batch 8, CPU) an SFT step takes about a quarter less
    (``benchmarks/bench_padding.py``), with the same logits at every real position.

    The mask is dropped only where that holds: a 2-D mask as long as the input, no key/value cache
    (generation keeps its mask) and no ``position_ids`` (packed rows need theirs). Left-padded
    batches (prompts before completions) keep the mask.

    >>> import torch
    >>> right_padded(torch.tensor([[1, 1, 1], [1, 1, 0]])), right_padded(torch.tensor([[0, 1, 1], [1, 1, 1]]))
    (True, False)
    """

    def hook(module: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        mask, ids = kwargs.get("attention_mask"), kwargs.get("input_ids")
        if ids is None:
            ids = kwargs.get("inputs_embeds")
        if (
            mask is None
            or ids is None
            or args
            or mask.dim() != 2
            or mask.shape[1] != ids.shape[1]
            or kwargs.get("past_key_values") is not None
            or kwargs.get("position_ids") is not None
            or not right_padded(mask)
        ):
            return args, kwargs
        return args, {**kwargs, "attention_mask": None}

    return model.register_forward_pre_hook(hook, with_kwargs=True)


def right_padded(mask: Any) -> bool:
    """Whether every row of a 0/1 attention mask is ones, then only zeros."""
    return bool((mask[:, 1:] <= mask[:, :-1]).all())


# -- callbacks ------------------------------------------------------------------------------------


def _callbacks(cfg: TrainConfig, manifest: dict[str, Any], progress: bool) -> list[Any]:
    from transformers import TrainerCallback

    class Interrupt(TrainerCallback):
        """Ctrl-C: finish the step, write a resumable checkpoint, stop. A second Ctrl-C stops at once."""

        def __init__(self) -> None:
            self.requested = False
            self._previous: Any = None

        def on_train_begin(self, args, state, control, **kwargs):
            self._previous = signal.getsignal(signal.SIGINT)

            def handler(signum, frame):
                if self.requested:
                    raise KeyboardInterrupt
                self.requested = True

            try:
                signal.signal(signal.SIGINT, handler)
            except ValueError:  # not the main thread: Ctrl-C stays Python's
                self._previous = None

        def on_step_end(self, args, state, control, **kwargs):
            if self.requested:
                control.should_save = True
                control.should_training_stop = True

        def on_train_end(self, args, state, control, **kwargs):
            if self._previous is not None:
                signal.signal(signal.SIGINT, self._previous)

    class Manifest(TrainerCallback):
        """Writes train.json beside every checkpoint, and keeps the log history."""

        def __init__(self) -> None:
            self.logs: list[dict[str, float]] = []
            #: When this invocation started and the seconds trained before it (from the checkpoint
            #: it resumed), so that each checkpoint records the time trained up to it.
            self.started = 0.0
            self.prior_s = 0.0

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs:
                self.logs.append(_numeric_row(logs, state.global_step))
                if state.log_history:
                    # seconds trained up to this row, resumes included: a step's time without the
                    # first step's warm-up (``experiment hat --estimate`` reads it), and the curve in time
                    state.log_history[-1]["elapsed_s"] = round(self.prior_s + time.perf_counter() - self.started, 3)

        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir() and state.is_world_process_zero:
                seconds = round(self.prior_s + time.perf_counter() - self.started, 3)
                write_manifest(folder, {**manifest, "steps": state.global_step, "seconds": seconds})

    class Progress(TrainerCallback):
        """A rich progress bar with the latest step metrics; when stderr is not a terminal (a log
        file, a job scheduler), one plain line per logged step instead, since a bar redrawn in a
        file only shows at the end. An RL step's rollouts (whole episodes, minutes a step on a
        CPU) are counted within the step: :meth:`rollouts`, a bar under the steps' or lines of
        their own (:func:`harnessctl.progress.progress_bars`)."""

        KEYS = ("loss", "eval_loss", "heldout_loss", "heldout_call_match", "reward", "grad_norm", "learning_rate")

        def __init__(self) -> None:
            self.bar: Any = None
            self.task: Any = None
            self.lines: Any = None  # the console plain lines go to, when not a terminal
            self.started = 0.0
            self.first_step = 0  # the step training started (or resumed) at, for the estimate
            self.shown: dict[str, float] = {}
            self.max_steps = 0
            self.rollout_task: Any = None  # the rollouts bar (a terminal)
            self.rollout_lines: Any = None  # the rollouts' plain lines (a log file), and their context
            self._rollout_context: Any = None

        def on_train_begin(self, args, state, control, **kwargs):
            if not state.is_world_process_zero:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.max_steps = state.max_steps
            console = Console(stderr=True)
            if not console.is_terminal:
                self.lines, self.started, self.first_step = console, time.perf_counter(), state.global_step
                self._rollout_context = progress_bars(f"train {cfg.stage}", console=console)
                self.rollout_lines = self._rollout_context.__enter__()
                return
            self.bar = Progress(
                TextColumn("[bold]{task.description}[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[metrics]}"),
                console=Console(stderr=True),
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task(
                f"train {cfg.stage}", total=state.max_steps, completed=state.global_step, metrics=""
            )

        def rollouts(self, done: int, total: int, step: int) -> None:
            """``done`` of the ``total`` episodes of the rollout for step ``step + 1`` are finished
            (0: it starts; the rate and the time left are this step's own)."""
            label = f"train {cfg.stage} step {step + 1}/{self.max_steps} rollouts"
            if self.rollout_lines is not None:
                self.rollout_lines(label, done, total)
            elif self.bar is not None:
                if self.rollout_task is None:
                    self.rollout_task = self.bar.add_task(label, total=total, metrics="")
                if done == 0:
                    self.bar.reset(self.rollout_task, total=total, description=label)
                self.bar.update(self.rollout_task, completed=done, total=total)

        def on_step_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.update(self.task, completed=state.global_step)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.lines is not None and logs and any(k in logs for k in self.KEYS):
                metrics = "  ".join(f"{k} {logs[k]:.4g}" for k in self.KEYS if k in logs)
                elapsed = time.perf_counter() - self.started
                eta = remaining_estimate(
                    elapsed, state.global_step - self.first_step, state.max_steps - state.global_step
                )
                self.lines.print(
                    f"train {cfg.stage} step {state.global_step}/{state.max_steps}  {metrics}  ({elapsed:.0f} s{eta})",
                    highlight=False,
                    soft_wrap=True,
                )
            if self.bar is not None and logs:
                self.shown.update({k: logs[k] for k in self.KEYS if k in logs})
                # the closing log (runtime, samples/s) keeps the last step's metrics on screen
                self.bar.update(
                    self.task, metrics="  ".join(f"{k} {self.shown[k]:.4g}" for k in self.KEYS if k in self.shown)
                )

        def on_train_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.stop()
                self.bar = None
            if self._rollout_context is not None:
                self._rollout_context.__exit__(None, None, None)
                self._rollout_context = self.rollout_lines = None

    callbacks = [Interrupt(), Manifest()]
    if progress:
        callbacks.append(Progress())
    return callbacks


# -- running --------------------------------------------------------------------------------------


def last_checkpoint(out: str | Path) -> Path | None:
    """The newest ``checkpoint-N`` folder under ``out`` (what ``--resume`` continues from)."""
    from transformers.trainer_utils import get_last_checkpoint

    out = Path(out)
    if not out.is_dir():
        return None
    found = get_last_checkpoint(str(out))
    return Path(found) if found else None


def prepare_out(cfg: TrainConfig, resume: bool) -> Path | None:
    """Checks the output folder; returns the checkpoint to resume from (``resume``) or None."""
    if not cfg.out:
        raise TrainError("--out: no output folder given; pass --out DIR")
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise TrainError(f"--out {out}: is a file; pass a folder")
    found = last_checkpoint(out)
    if resume:
        if found is None:
            raise TrainError(f"--resume: no checkpoint-N folder under {out}; run without --resume to start")
        return found
    if found is not None or (out / MANIFEST).is_file():
        raise TrainError(
            f"--out {out}: already holds a training run; pass --resume to continue it or choose another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    return None


def run_trainer(
    trainer: Any,
    cfg: TrainConfig,
    *,
    parent: str | None,
    data_hash: str | None,
    resume_from: Path | None = None,
    progress: bool = True,
    extra_manifest: dict[str, Any] | None = None,
    rollout: Any | None = None,
) -> TrainResult:
    """Train, save the final model (LoRA merged) with its tokenizer and ``train.json``, and report.

    Ctrl-C ends the current step, writes a resumable checkpoint and returns ``interrupted=True``.
    ``rollout``: an RL rollout function whose episodes the progress counts within each step
    (its ``on_episode`` hook).
    """
    manifest = manifest_for(cfg, parent=parent, data_hash=data_hash, extra=extra_manifest)
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)  # metrics go to our progress line and the summary
    trainer.remove_callback(ProgressCallback)
    callbacks = _callbacks(cfg, manifest, progress)
    for cb in callbacks:
        trainer.add_callback(cb)
    interrupt, logger = callbacks[0], callbacks[1]
    if progress and rollout is not None:
        rollout.on_episode = callbacks[-1].rollouts
    started, cpu_started = time.perf_counter(), time.process_time()
    logger.started, logger.prior_s = started, _seconds_at(resume_from)
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    state = trainer.state
    out = Path(cfg.out)
    tokens = int(max([row.get("num_tokens", 0.0) for row in logger.logs] + [state.num_input_tokens_seen or 0]))
    start_step = _step_of(resume_from)
    result = TrainResult(
        stage=cfg.stage,
        out=str(out),
        steps=int(state.global_step),
        seconds=round(seconds, 3),
        total_seconds=round(logger.prior_s + seconds, 3),
        cpu_seconds=round(cpu_seconds, 3),
        hardware=manifest["hardware"],
        tokens=tokens,
        tokens_per_s=0.0,
        metrics=_final_metrics(logger.logs),
        interrupted=interrupt.requested,
        resumed_from=str(resume_from) if resume_from else None,
        # the whole curve: a resumed trainer's history starts with the checkpoint's
        log=[r for r in _numeric_history(state.log_history) if r.keys() & set(CURVE_KEYS)],
    )
    if resume_from is not None and start_step:  # count only this run's tokens
        result.tokens = int(max(0.0, tokens - _tokens_at(resume_from)))
    result.tokens_per_s = round(result.tokens / seconds, 1) if seconds > 0 else 0.0
    if interrupt.requested:
        found = last_checkpoint(out)
        result.checkpoint = str(found) if found else None
        return result
    if trainer.accelerator.is_main_process:
        save_final(
            trainer,
            out,
            {**manifest, "steps": result.steps, "seconds": result.total_seconds, "metrics": result.metrics},
        )
    return result


def save_final(trainer: Any, out: Path, manifest: dict[str, Any]) -> None:
    """The final model in ``out``. On a pretrained base: the adapter alone, its base named in
    ``train.json`` (``local:OUT`` loads base + adapter). On a whole checkpoint (the tiny model):
    the model, LoRA adapters merged, with its tokenizer."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if manifest.get("base") and is_peft_model(model):
        save_adapter(model, out)
        write_manifest(out, manifest)
        return
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(out)
    trainer.processing_class.save_pretrained(out)
    write_manifest(out, manifest)


def manifest_for(
    cfg: TrainConfig, *, parent: str | None, data_hash: str | None, extra: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "manifest_version": MANIFEST_VERSION,
        "stage": cfg.stage,
        "parent": parent or None,
        "base": start_base(parent or "", cfg),
        "data_hash": data_hash,
        "config": cfg.to_dict(),
        "packages": package_versions(),
        "hardware": hardware(cfg),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **(extra or {}),
    }


def write_manifest(folder: str | Path, manifest: dict[str, Any]) -> Path:
    path = Path(folder) / MANIFEST
    atomic_write(path, json.dumps(manifest, indent=2, default=str) + "\n")
    return path


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def package_versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _step_of(path: Path | None) -> int:
    if path is None:
        return 0
    try:
        return int(path.name.rsplit("-", 1)[-1])
    except ValueError:
        return 0


def _seconds_at(checkpoint: Path | None) -> float:
    """Wall seconds trained up to a checkpoint, from the train.json written beside it (0 for a
    checkpoint written before it was recorded)."""
    if checkpoint is None:
        return 0.0
    manifest = read_manifest(checkpoint) or {}
    return float(manifest.get("seconds") or 0.0)


def _numeric_row(entry: dict[str, Any], step: int | float) -> dict[str, float]:
    """One logged row as numbers only (TRL adds tables and text to some rows), with its step."""
    row = {k: float(v) for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    row["step"] = float(step)
    return row


def _numeric_history(history: list[dict[str, Any]]) -> list[dict[str, float]]:
    """The trainer's whole log history (a resumed run's includes the checkpoint's) as numbers."""
    return [_numeric_row(entry, entry.get("step", 0)) for entry in history]


def _tokens_at(checkpoint: Path) -> float:
    """Tokens trained up to a checkpoint, from its trainer_state.json (0 when not logged)."""
    state = checkpoint / "trainer_state.json"
    if not state.is_file():
        return 0.0
    history = json.loads(state.read_text(encoding="utf-8")).get("log_history", [])
    return max([float(h.get("num_tokens", 0.0)) for h in history] + [0.0])


def _final_metrics(logs: list[dict[str, float]]) -> dict[str, float]:
    final: dict[str, float] = {}
    for row in logs:
        final.update(row)
    return {k: round(v, 6) for k, v in final.items()}


def copy_tokenizer_files(src: Path, dst: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)


# -- the final evaluation -------------------------------------------------------------------------


def evaluate(
    out: str | Path,
    cfg: TrainConfig,
    suites: str | None = None,
    limit: int | None = None,
    runs_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Evaluates the checkpoint in ``out`` on ``suites`` (``--eval``), ``limit`` cases each, and
    returns ``{"scores": {suite: score}, "run": folder}``. Runs go under ``cfg.out/eval-runs``."""
    names = [s.strip() for s in (suites if suites is not None else cfg.eval_suites).split(",") if s.strip()]
    if not names:
        return {}
    config = EvalConfig(
        suites=names,
        model=f"local:{Path(out).resolve()}",
        limit=limit or cfg.eval_limit,
        jobs=1,
        cache=False,
        harness_path=cfg.harness,
        runs_dir=str(runs_dir or Path(cfg.out) / "eval-runs"),
        max_tokens=cfg.eval_max_tokens,
        seed=cfg.seed,
    )
    outcome = run_eval(config)
    scores = {name: s.get("score") for name, s in outcome.summary.get("suites", {}).items()}
    return {"scores": scores, "run": str(outcome.store.root)}


def finish(result: TrainResult, cfg: TrainConfig) -> TrainResult:
    """The final evaluation (``eval_suites``) of a run that was not interrupted, on the main process."""
    if result.interrupted or not cfg.eval_suites:
        return result
    from accelerate import PartialState

    if PartialState().is_main_process:
        result.eval = evaluate(result.out, cfg)
    return result
