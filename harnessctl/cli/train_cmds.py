"""``harnessctl train base|sft|distill|rl``: the bundled trainer's stages (HAT), a thin layer over
:mod:`trainer` (its stages imported inside the command: torch, transformers and TRL stay optional).

Every config field can be set: the common ones with options (their help and the default shown are
the field's metadata: :func:`field_option`), any other with ``--set FIELD=VALUE`` (repeatable);
``--config FILE`` (or a shipped name such as ``tiny-cpu``) sets them first.
``--resume`` continues from the last checkpoint under ``--out``; Ctrl-C writes a resumable checkpoint
and exits 130; ``--eval livestream,variant --eval-limit N`` evaluates the result.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from trainer.config import parse_set
from trainer.required import check_inputs
from trainer.stage_configs import CONFIG_CLASSES, config_class, load_config

from .common import checkpoint_folder
from .output import CLIError, cli_errors, err, out, print_json

train_app = typer.Typer(
    help="Train the compact model: the HAT stages on TRL (base, sft, distill, rl).", no_args_is_help=True
)
#: Below each stage's options: what --model and --teacher accept, and how to set any other field.
EPILOG = (
    "--model and --teacher take a folder, local:PATH or shipped:NAME (e.g. shipped:hat); "
    "any other field: --set FIELD=VALUE (`python -m trainer.STAGE --help` lists them)."
)


def field_option(stage: str, name: str, *decls: str, **kwargs: Any) -> Any:
    """A ``typer.Option`` for the field ``name`` of the core's ``stage`` config: its help is the
    field's metadata (written once, shown by ``python -m trainer.STAGE --help`` too), the default
    shown the field's. Reads :data:`~trainer.stage_configs.CONFIG_CLASSES`, which loads no extension.

    >>> field_option("sft", "max_steps", "--max-steps").help
    'Optimizer steps to run.'
    """
    field = next(f for f in dataclasses.fields(CONFIG_CLASSES[stage]) if f.name == name)
    default = field.default
    shown = (f"--{name}" if default else f"--no-{name}") if isinstance(default, bool) else str(default)
    return typer.Option(*decls, help=field.metadata["help"], show_default=shown or False, **kwargs)


ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        help="Config file, or a shipped one: smollm2-cpu (LoRA on the pretrained base), tiny-cpu, lora-8b-1gpu, multi-gpu. Without it, the built-in defaults (trainer/config.py and the stage's trainer/STAGE_config.py), which are not tiny-cpu's.",
    ),
]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="Any config field: --set learning_rate=1e-4 (repeatable).")
]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint under --out.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the final summary as one JSON object on stdout.")]


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    train_app.command("base", epilog=EPILOG)(base)
    train_app.command("sft", epilog=EPILOG)(sft)
    train_app.command("distill", epilog=EPILOG)(distill)
    train_app.command("rl", epilog=EPILOG)(rl)


def base(
    out_dir: Annotated[Path | None, field_option("base", "out", "--out", "-o")] = None,
    model: Annotated[str | None, field_option("base", "model", "--model", "-m")] = None,
    config: ConfigOpt = None,
    max_steps: Annotated[int | None, field_option("base", "max_steps", "--max-steps", min=1)] = None,
    seed: Annotated[int | None, field_option("base", "seed", "--seed")] = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: Annotated[str | None, field_option("base", "eval_suites", "--eval")] = None,
    eval_limit: Annotated[int | None, field_option("base", "eval_limit", "--eval-limit", min=1)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Stage 0: a base model from scratch on the general corpus (skipped with a pretrained model)."""
    _train(
        "base",
        config,
        set_,
        resume,
        as_json,
        out=out_dir,
        model=model,
        max_steps=max_steps,
        seed=seed,
        eval_suites=eval_suites,
        eval_limit=eval_limit,
    )


def sft(
    data: Annotated[Path | None, field_option("sft", "data", "--data", "-d")] = None,
    out_dir: Annotated[Path | None, field_option("sft", "out", "--out", "-o")] = None,
    model: Annotated[str | None, field_option("sft", "model", "--model", "-m")] = None,
    config: ConfigOpt = None,
    max_steps: Annotated[int | None, field_option("sft", "max_steps", "--max-steps", min=1)] = None,
    seed: Annotated[int | None, field_option("sft", "seed", "--seed")] = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: Annotated[str | None, field_option("sft", "eval_suites", "--eval")] = None,
    eval_limit: Annotated[int | None, field_option("sft", "eval_limit", "--eval-limit", min=1)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Stage 1 (HSA-SFT): assistant-only SFT on harness-augmented trajectories."""
    _train(
        "sft",
        config,
        set_,
        resume,
        as_json,
        data=data,
        out=out_dir,
        model=model,
        max_steps=max_steps,
        seed=seed,
        eval_suites=eval_suites,
        eval_limit=eval_limit,
    )


def distill(
    teacher: Annotated[str | None, field_option("distill", "teacher", "--teacher", "-t")] = None,
    prompts: Annotated[Path | None, field_option("distill", "prompts", "--prompts")] = None,
    out_dir: Annotated[Path | None, field_option("distill", "out", "--out", "-o")] = None,
    model: Annotated[str | None, field_option("distill", "model", "--model", "-m")] = None,
    config: ConfigOpt = None,
    max_steps: Annotated[int | None, field_option("distill", "max_steps", "--max-steps", min=1)] = None,
    seed: Annotated[int | None, field_option("distill", "seed", "--seed")] = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: Annotated[str | None, field_option("distill", "eval_suites", "--eval")] = None,
    eval_limit: Annotated[int | None, field_option("distill", "eval_limit", "--eval-limit", min=1)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Stage 2: on-policy distillation (reverse KL) to the base model on general prompts."""
    _train(
        "distill",
        config,
        set_,
        resume,
        as_json,
        teacher=teacher,
        prompts=prompts,
        out=out_dir,
        model=model,
        max_steps=max_steps,
        seed=seed,
        eval_suites=eval_suites,
        eval_limit=eval_limit,
    )


def rl(
    hsa: Annotated[bool | None, field_option("rl", "hsa", "--hsa/--no-hsa")] = None,
    harness: Annotated[Path | None, field_option("rl", "harness", "--harness", "-H")] = None,
    out_dir: Annotated[Path | None, field_option("rl", "out", "--out", "-o")] = None,
    model: Annotated[str | None, field_option("rl", "model", "--model", "-m")] = None,
    config: ConfigOpt = None,
    max_steps: Annotated[int | None, field_option("rl", "max_steps", "--max-steps", min=1)] = None,
    seed: Annotated[int | None, field_option("rl", "seed", "--seed")] = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: Annotated[str | None, field_option("rl", "eval_suites", "--eval")] = None,
    eval_limit: Annotated[int | None, field_option("rl", "eval_limit", "--eval-limit", min=1)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Stage 3 (HSA-RL): GRPO over whole simulator episodes, a fresh harness variant per prompt group."""
    _train(
        "rl",
        config,
        set_,
        resume,
        as_json,
        hsa=hsa,
        harness=harness,
        out=out_dir,
        model=model,
        max_steps=max_steps,
        seed=seed,
        eval_suites=eval_suites,
        eval_limit=eval_limit,
    )


def _train(stage: str, config: str | None, sets: list[str] | None, resume: bool, as_json: bool, **options: Any) -> None:
    with cli_errors():
        overrides: dict[str, Any] = dict(parse_set(item) for item in sets or [])
        for name in config_class(stage).checkpoint_fields:  # checkpoints like --teacher: local:PATH, shipped:NAME
            if overrides.get(name):
                overrides[name] = checkpoint_folder(overrides[name])
        overrides.update(
            {
                k: (checkpoint_folder(str(v)) if k in ("model", "teacher") else str(v))
                for k, v in options.items()
                if v is not None
            }
        )
        cfg = load_config(stage, config, overrides)
        check_inputs(stage, cfg)  # every missing option in one message, before the stages (and torch) load
        try:
            # lazy: the stages import the data and episode code (about 75 ms), torch later when they run
            from trainer.stages import run_stage
        except ImportError as e:
            raise CLIError(
                f"the trainer needs the train extra ({e.name} is missing): pip install 'harnessctl[train]'"
            ) from None
        result = run_stage(stage, cfg, resume=resume, progress=not as_json)
    summary = result.to_dict()
    log = summary.pop("log", [])
    if as_json:
        print_json(summary)
    else:
        _print_summary(result, log)
    if result.interrupted:
        err.print(
            f"[yellow]interrupted:[/] checkpoint {result.checkpoint}; continue with the same command and --resume"
        )
        raise typer.Exit(130)


def _print_summary(result: Any, log: list[dict[str, float]]) -> None:
    table = Table(title=f"train {result.stage}", show_header=False, box=None)
    table.add_row("steps", str(result.steps))
    time_text = f"{result.seconds:.1f} s"
    if result.resumed_from and result.total_seconds > result.seconds:
        time_text += f" ({result.total_seconds:.1f} s with the runs before the resume)"
    table.add_row("time", time_text)
    table.add_row("tokens/s", f"{result.tokens_per_s:.0f}")
    if result.hardware:  # a time means little without the machine: bf16 instructions alone change it by 20 %
        # lazy: the trainer stays off the `harnessctl --help` path
        from trainer.common import hardware_text

        table.add_row("on", hardware_text(result.hardware))
    for key in ("loss", "reward", "grad_norm"):
        if key in result.metrics:
            table.add_row(key, f"{result.metrics[key]:.4g}")
    for key, value in result.extra.items():
        table.add_row(key.replace("_", " "), str(value))
    for suite, score in (result.eval.get("scores") or {}).items():
        table.add_row(f"eval {suite}", f"{score:.1f}" if isinstance(score, (int, float)) else str(score))
    table.add_row("model", f"local:{result.out}")
    out.print(table)
    silent = result.extra.get("groups_without_signal")
    if isinstance(silent, (int, float)) and silent >= 0.9:
        err.print(
            f"[yellow]note:[/] {silent:.0%} of GRPO's prompt groups got the same reward for every episode "
            "(zero advantage, no gradient): start RL from a policy that succeeds sometimes (train sft longer)"
        )
