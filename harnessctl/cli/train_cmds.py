"""``harnessctl train base|sft|distill|rl``: the bundled trainer's stages (HAT), a thin layer over
:mod:`trainer` (imported inside the command: torch, transformers and TRL stay optional).

Every config field can be set: the common ones have options, any other with ``--set FIELD=VALUE``
(repeatable); ``--config FILE`` (or a shipped name such as ``tiny-cpu``) sets them first.
``--resume`` continues from the last checkpoint under ``--out``; Ctrl-C writes a resumable checkpoint
and exits 130; ``--eval livestream,variant --eval-limit N`` evaluates the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from .common import checkpoint_folder
from .output import CLIError, cli_errors, err, out, print_json

train_app = typer.Typer(
    help="Train the compact model: the HAT stages on TRL (base, sft, distill, rl).", no_args_is_help=True
)

ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        help="Config file, or a shipped one: smollm2-cpu (LoRA on the pretrained base), tiny-cpu, lora-8b-1gpu, multi-gpu. Without it, the built-in defaults (trainer/config.py and the stage's trainer/STAGE_config.py), which are not tiny-cpu's.",
    ),
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Output folder: checkpoints, the final model, train.json.")
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", "-m", help="Starting checkpoint: a folder, local:PATH or shipped:NAME (e.g. shipped:hat)."),
]
StepsOpt = Annotated[int | None, typer.Option("--max-steps", min=1, help="Optimizer steps.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Seed of data order, sampling and initialisation.")]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="Any config field: --set learning_rate=1e-4 (repeatable).")
]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint under --out.")]
EvalOpt = Annotated[str | None, typer.Option("--eval", help="Suites to evaluate at the end, e.g. livestream,variant.")]
EvalLimitOpt = Annotated[
    int | None, typer.Option("--eval-limit", min=1, help="Cases per suite in the final evaluation.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the final summary as one JSON object on stdout.")]


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    train_app.command("base")(base)
    train_app.command("sft")(sft)
    train_app.command("distill")(distill)
    train_app.command("rl")(rl)


def base(
    out_dir: OutOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    max_steps: StepsOpt = None,
    seed: SeedOpt = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: EvalOpt = None,
    eval_limit: EvalLimitOpt = None,
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
    data: Annotated[
        Path | None, typer.Option("--data", "-d", help="Dataset folder from `augment --trajectories`.")
    ] = None,
    out_dir: OutOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    max_steps: StepsOpt = None,
    seed: SeedOpt = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: EvalOpt = None,
    eval_limit: EvalLimitOpt = None,
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
    teacher: Annotated[
        str | None, typer.Option("--teacher", "-t", help="Teacher: the base checkpoint before domain training.")
    ] = None,
    prompts: Annotated[
        Path | None, typer.Option("--prompts", help="JSONL of general prompts (default: the project's own).")
    ] = None,
    out_dir: OutOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    max_steps: StepsOpt = None,
    seed: SeedOpt = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: EvalOpt = None,
    eval_limit: EvalLimitOpt = None,
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
    no_hsa: Annotated[bool, typer.Option("--no-hsa", help="Ablation: every episode under the harness itself.")] = False,
    harness: Annotated[
        Path | None, typer.Option("--harness", "-H", help="Harness folder the episodes run under.")
    ] = None,
    out_dir: OutOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = None,
    max_steps: StepsOpt = None,
    seed: SeedOpt = None,
    set_: SetOpt = None,
    resume: ResumeOpt = False,
    eval_suites: EvalOpt = None,
    eval_limit: EvalLimitOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stage 3 (HSA-RL): GRPO over whole simulator episodes, a fresh harness variant per prompt group."""
    _train(
        "rl",
        config,
        set_,
        resume,
        as_json,
        hsa=False if no_hsa else None,
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
        try:
            from trainer.config import parse_set
            from trainer.required import check_inputs
            from trainer.stage_configs import config_class, load_config
            from trainer.stages import run_stage
        except ImportError as e:
            raise CLIError(
                f"the trainer needs the train extra ({e.name} is missing): pip install 'harnessctl[train]'"
            ) from None
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
        check_inputs(stage, cfg)  # every missing option in one message, before torch loads
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
