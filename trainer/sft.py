"""Stage 1, HSA-SFT: TRL's ``SFTTrainer`` on the chats ``harnessctl augment --trajectories`` writes
(harness variants, or ``--fixed-harness`` for the baseline: same command, same config), loss on the
assistant's tokens only (the chat template's generation markers).

``max_length`` is sized from the data; rows that it would cut are counted before training and the
run refuses above ``max_truncated_share`` (assistant-only loss would drop them silently).

>>> from trainer.stage_configs import load_config
>>> cfg = load_config("sft", "tiny-cpu", {"model": "m", "data": "out/datasets/x", "out": "out/sft"})  # doctest: +SKIP
>>> train_sft(cfg).tokens_per_s                                                                        # doctest: +SKIP

Command line: ``harnessctl train sft --model PATH --data DIR --out DIR`` or
``accelerate launch -m trainer.sft --config tiny-cpu --model PATH --data DIR --out DIR``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.cli import main
from trainer.common import (
    TrainError,
    TrainResult,
    check_checkpoint,
    file_hash,
    finish,
    load_model,
    peft_config,
    prepare_out,
    run_trainer,
    setup,
    training_arguments,
)
from trainer.config import TrainConfig
from trainer.data import plan_lengths, read_chat_rows, to_dataset, token_lengths, training_chats
from trainer.sft_config import SFTStageConfig


def sft_trainer(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    cfg: TrainConfig,
    max_length: int,
    heldout: list[dict[str, Any]] | None = None,
) -> Any:
    """A TRL ``SFTTrainer`` over ``rows`` with assistant-only loss (shared by stages 0 and 1);
    ``heldout`` rows, when given, are scored every ``heldout_steps`` (logged as ``eval_loss``)."""
    from trl import SFTConfig, SFTTrainer

    scoring: dict[str, Any] = {}
    if heldout:
        scoring = {
            "eval_strategy": "steps",
            "eval_steps": int(getattr(cfg, "heldout_steps", 0)) or cfg.save_steps,
            "per_device_eval_batch_size": cfg.per_device_batch_size,
            # TRL counts tokens in its training logs; a run's last log, after an evaluation, has
            # none: the trainer's own count (of the same non-padding tokens) keeps the total
            "include_num_input_tokens_seen": "non_padding",
        }
    padding_free = bool(getattr(cfg, "padding_free", False))
    args = SFTConfig(
        **scoring,
        **training_arguments(cfg),
        # the rows were fit to max_length already; TRL enforces it only on padded batches
        max_length=None if padding_free else max_length,
        assistant_only_loss=True,
        packing=bool(getattr(cfg, "packing", False)),
        padding_free=padding_free,
        # transformers' LengthGroupedSampler: shuffled megabatches, sorted by length within each
        train_sampling_strategy="group_by_length" if getattr(cfg, "group_by_length", False) else "random",
        dataset_num_proc=None,
    )
    return SFTTrainer(
        model=model,
        args=args,
        train_dataset=to_dataset(rows),
        eval_dataset=to_dataset(heldout) if heldout else None,
        processing_class=tokenizer,
        peft_config=peft_config(cfg, model),
    )


def fit_rows(
    rows: list[dict[str, Any]], tokenizer: Any, model: Any, requested: int, max_share: float
) -> tuple[list, dict]:
    """The rows that fit ``max_length`` (sized from the data when ``requested`` is 0), and the counts."""
    lengths = token_lengths(rows, tokenizer)
    positions = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    plan = plan_lengths(lengths, requested=requested, max_positions=positions, max_share=max_share)
    kept = [r for r, n in zip(rows, lengths, strict=True) if n <= plan.max_length]
    info = {
        "rows": plan.rows,
        "rows_dropped": plan.over,
        "max_length": plan.max_length,
        "longest_row": plan.longest,
        "row_tokens": sum(n for n in lengths if n <= plan.max_length),
    }
    return kept, info


def train_sft(cfg: SFTStageConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Run stage 1 as ``cfg`` says; returns what it did (the model is saved in ``cfg.out``)."""
    if not cfg.data:
        raise TrainError(
            "--data: no dataset folder given; build one with `harnessctl augment --trajectories N --out DIR`"
        )
    check_checkpoint(cfg.model, base=cfg.base)
    setup(cfg)
    rows = read_chat_rows(cfg.data, cfg.split)
    resume_from = prepare_out(cfg, resume)
    model, tokenizer = load_model(cfg.model, cfg)
    training_rows, decision_chats = training_chats(
        rows,
        viewers_per_row=cfg.viewers_per_row,
        decision_rows=cfg.decision_rows,
        decision_viewers=cfg.decision_viewers,
        decision_balance=cfg.decision_balance,
    )
    kept, info = fit_rows(training_rows, tokenizer, model, cfg.max_length, cfg.max_truncated_share)
    if cfg.viewers_per_row > 1:
        info.update(viewers_per_row=cfg.viewers_per_row, viewer_rows=len(rows))
    if cfg.decision_rows:
        info.update(decision_chats=decision_chats)
    heldout = heldout_rows(cfg, tokenizer, info["max_length"])
    trainer = sft_trainer(model, tokenizer, kept, cfg, info["max_length"], heldout)
    if heldout:
        info["heldout_rows"] = len(heldout)
    data = Path(cfg.data)
    data_file = data if data.is_file() else data / f"{cfg.split}.jsonl"
    result = run_trainer(
        trainer,
        cfg,
        parent=cfg.model,
        data_hash=file_hash(data_file),
        resume_from=resume_from,
        progress=progress,
        extra_manifest={"data": str(data_file), **info},
    )
    result.extra.update(info)
    return finish(result, cfg)


def heldout_rows(cfg: SFTStageConfig, tokenizer: Any, max_length: int) -> list[dict[str, Any]]:
    """The first ``cfg.heldout_rows`` rows of the dataset's validation split that fit ``max_length``
    (none when training on that split, or when the folder has no validation file)."""
    folder = Path(cfg.data)
    if not cfg.heldout_rows or cfg.split == "validation" or not (folder / "validation.jsonl").is_file():
        return []
    rows = read_chat_rows(cfg.data, "validation")[: cfg.heldout_rows]
    return [row for row, n in zip(rows, token_lengths(rows, tokenizer)) if n <= max_length]


if __name__ == "__main__":
    main("sft", train_sft)
