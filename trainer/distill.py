"""Stage 2, general on-policy distillation: TRL's ``DistillationTrainer``, the student (the SFT
checkpoint) samples, and learns the teacher's (the base model before domain training) next-token
distribution on its own samples — ``beta=1``, reverse KL — so general skills lost in domain
training come back without undoing it.

Prompts: ``prompts: FILE`` (JSONL, one ``{"prompt": "..."}`` or ``{"messages": [...]}`` per line,
such as a local Tulu 3 export) or, offline, the project's own general prompts
(:func:`trainer.general_corpus.general_prompts`), never the ifeval suite's. The general (ifeval) and
domain (livestream) scores are reported before and after (``eval_suites``).

>>> cfg = load_config("distill", "tiny-cpu", {"model": "out/sft", "teacher": "out/base", "out": "o"})  # doctest: +SKIP
>>> train_distill(cfg).extra["before"]                                                             # doctest: +SKIP
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.common import (
    TrainError,
    TrainResult,
    check_checkpoint,
    evaluate,
    file_hash,
    load_model,
    peft_config,
    prepare_out,
    run_trainer,
    setup,
    start_base,
    text_hash,
    training_arguments,
)
from trainer.config import DistillStageConfig
from trainer.data import check_row


@dataclass
class DistillPrompt:
    """One prompt the student answers: chat ``messages`` up to the answer, and the ``tools`` their
    row listed (an agent trajectory's), if any."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None


def read_prompts(
    path: str | Path, n: int, *, turn: str = "first", seed: int = 0, what: str = "--prompts"
) -> list[DistillPrompt]:
    """Up to ``n`` prompts from a JSONL file: ``prompt`` text, or ``messages`` cut before an
    assistant turn — the first (``turn="first"``), or one drawn per row (``turn="any"``, seeded), so
    that an agent trajectory (an SFT row, with its ``tools``) gives prompts at every step of an
    episode, after tool results too.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "p.jsonl"
    >>> row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    >>> _ = p.write_text(json.dumps(row) + chr(10))
    >>> read_prompts(p, 5)[0].messages
    [{'role': 'user', 'content': 'hi'}]
    """
    import random

    p = Path(path)
    if not p.is_file():
        raise TrainError(f'{what} {path}: no such file; pass a JSONL file of {{"prompt": ...}} lines')
    rng = random.Random(seed)
    out = []
    for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise TrainError(f"{p}:{number}: not valid JSON ({e.msg})") from None
        if isinstance(row, dict) and isinstance(row.get("prompt"), str) and row["prompt"].strip():
            out.append(DistillPrompt([{"role": "user", "content": row["prompt"]}]))
        elif isinstance(row, dict) and isinstance(row.get("messages"), list) and row["messages"]:
            if "tools" in row:  # an agent trajectory, as SFT reads it (tools as a list or as JSON text)
                row = check_row(row, f"{p}:{number}")
            out.append(DistillPrompt(_cut(row["messages"], turn, rng, f"{p}:{number}"), row.get("tools") or None))
        else:
            raise TrainError(f"{p}:{number}: no 'prompt' (text) or 'messages' (chat) column")
        if len(out) >= n:
            break
    if not out:
        raise TrainError(f"{p}: no prompts")
    return out


def _cut(messages: list[Any], turn: str, rng: Any, where: str) -> list[dict[str, Any]]:
    """``messages`` before the first assistant turn, or before one drawn at random."""
    if not all(isinstance(m, dict) for m in messages):
        raise TrainError(f"{where}: every item of 'messages' must be an object with a role")
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not answers:
        cut = len(messages)
    else:
        cut = answers[0] if turn == "first" else rng.choice(answers)
    turns = [dict(m) for m in messages[:cut]]
    if turn == "first":
        turns = [{"role": str(m.get("role")), "content": str(m.get("content") or "")} for m in turns]
    if not turns or turns[-1].get("role") not in ("user", "tool"):
        raise TrainError(f"{where}: 'messages' must start with user (or system) turns before the answer")
    return turns


def prompt_rows(prompts: list[DistillPrompt], tokenizer: Any) -> list[dict[str, Any]]:
    """The trainer's dataset rows: chat prompts as they are, or, when a prompt carries tools or
    earlier answers (an agent trajectory's step), every prompt rendered to text by the chat
    template with its own tools — the trainer takes one tool list for all prompts, an agent's
    listing changes per row (HSA variants)."""
    if not any(p.tools or any(m.get("role") == "assistant" for m in p.messages) for p in prompts):
        return [{"prompt": p.messages} for p in prompts]
    return [
        {
            "prompt": tokenizer.apply_chat_template(
                p.messages, tools=p.tools or None, add_generation_prompt=True, tokenize=False
            )
        }
        for p in prompts
    ]


def check_same_vocabulary(student: Any, teacher: Any, teacher_path: str) -> None:
    """Token-level distillation compares distributions over one vocabulary: refuse another one."""
    s_vocab, t_vocab = student.get_vocab(), teacher.get_vocab()
    if s_vocab != t_vocab:
        only = sorted(set(t_vocab) ^ set(s_vocab))[:3]
        detail = (
            f"{len(t_vocab)} vs the student's {len(s_vocab)} tokens"
            if len(t_vocab) != len(s_vocab)
            else f"tokens differ, e.g. {only}"
        )
        raise TrainError(
            f"--teacher {teacher_path}: another vocabulary ({detail}); on-policy distillation needs a teacher "
            "that shares the student's tokenizer (for the tiny model: the stage-0 base it was trained from)"
        )


def heldout_watch(cfg: DistillStageConfig, tokenizer: Any, model: Any, teacher: Any) -> tuple[Any, dict[str, Any]]:
    """The callback that scores ``cfg.heldout`` rows during training (None without them), and what
    the manifest records: the rows, the teacher's loss on them (the agent's teacher: the anchor
    teacher when there is one) and, with ``stop_near_teacher``, the loss at which training stops."""
    if not cfg.heldout:
        return None, {}
    from trainer.heldout import HeldoutScorer, heldout_callback

    positions = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    scorer = HeldoutScorer.from_path(cfg.heldout, cfg.heldout_rows, tokenizer, cfg, positions)
    teacher_loss = scorer.loss(teacher)
    stop_at = round(teacher_loss * (1 + cfg.stop_near_teacher), 4) if cfg.stop_near_teacher else None
    info = {"heldout": cfg.heldout, "heldout_rows": len(scorer.rows), "heldout_teacher_loss": teacher_loss}
    if stop_at is not None:
        info["heldout_stop_at"] = stop_at
    if cfg.heldout_calls:
        info["heldout_teacher_call_match"] = scorer.call_match(teacher)
    return heldout_callback(scorer, cfg.heldout_steps, stop_at, cfg.heldout_calls), info


def train_distill(cfg: DistillStageConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Run stage 2 as ``cfg`` says; ``extra`` holds the eval scores before training."""
    from datasets import Dataset
    from trl import DistillationConfig, DistillationTrainer

    from trainer.common import finish
    from trainer.general_corpus import general_prompts

    check_checkpoint(cfg.model, base=cfg.base)
    if not cfg.teacher:
        # an adapter's teacher is the pretrained base it grew from (reverse KL to the base)
        base = start_base(cfg.model, cfg)
        if not base:
            raise TrainError("--teacher: no teacher given; pass the base checkpoint the student was trained from")
        cfg.teacher = str(base.get("path") or base["name"])
    check_checkpoint(cfg.teacher, "--teacher")
    setup(cfg)
    resume_from = prepare_out(cfg, resume)
    model, tokenizer = load_model(cfg.model, cfg)
    teacher, teacher_tokenizer = load_model(cfg.teacher, cfg, what="--teacher")
    check_same_vocabulary(tokenizer, teacher_tokenizer, cfg.teacher)
    anchor_teacher, n_anchor = None, 0
    if cfg.anchor_teacher:
        check_checkpoint(cfg.anchor_teacher, "anchor_teacher")
        anchor_teacher, anchor_tokenizer = load_model(cfg.anchor_teacher, cfg, what="anchor_teacher")
        check_same_vocabulary(tokenizer, anchor_tokenizer, cfg.anchor_teacher)
        n_anchor = max(1, round(cfg.n_prompts * cfg.anchor_share))
    n_general = cfg.n_prompts - n_anchor
    if cfg.prompts:
        prompts = read_prompts(cfg.prompts, n_general, turn=cfg.prompt_turn, seed=cfg.seed)
        data_hash = file_hash(cfg.prompts)
    else:
        prompts = [DistillPrompt([{"role": "user", "content": p}]) for p in general_prompts(n_general, seed=cfg.seed)]
        data_hash = text_hash(json.dumps([p.messages for p in prompts]))
    anchor_prompts = []
    if anchor_teacher is not None:
        anchor_prompts = read_prompts(
            cfg.anchor_prompts, n_anchor, turn=cfg.prompt_turn, seed=cfg.seed, what="anchor_prompts"
        )
        data_hash = text_hash(f"{data_hash} {file_hash(cfg.anchor_prompts)}")
    before = {}
    if cfg.eval_suites and resume_from is None:
        before = evaluate(cfg.model, cfg, runs_dir=Path(cfg.out) / "eval-runs-before")
    tokenizer.padding_side = "left"
    args = DistillationConfig(
        **training_arguments(cfg),
        beta=cfg.beta,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
    )
    heldout, heldout_info = heldout_watch(cfg, tokenizer, model, anchor_teacher or teacher)
    rows = prompt_rows(prompts + anchor_prompts, tokenizer)
    trainer_kwargs = {
        "model": model,
        "teacher_model": teacher,
        "args": args,
        "processing_class": tokenizer,
        "peft_config": peft_config(cfg, model),
    }
    if anchor_teacher is None:
        trainer = DistillationTrainer(train_dataset=Dataset.from_list(rows), **trainer_kwargs)
    else:
        from trainer.two_teachers import TEACHER_COLUMN, make_two_teacher_trainer

        for i, row in enumerate(rows):
            row[TEACHER_COLUMN] = int(i >= len(prompts))
        trainer = make_two_teacher_trainer(
            anchor_teacher=anchor_teacher, train_dataset=Dataset.from_list(rows), **trainer_kwargs
        )
    if heldout is not None:
        heldout.trainer = trainer
        trainer.add_callback(heldout)
    result = run_trainer(
        trainer,
        cfg,
        parent=cfg.model,
        data_hash=data_hash,
        resume_from=resume_from,
        progress=progress,
        extra_manifest={
            "teacher": cfg.teacher,
            **({"anchor_teacher": cfg.anchor_teacher, "anchor_prompts": len(anchor_prompts)} if anchor_prompts else {}),
            "data": cfg.prompts or f"general prompts, {len(prompts)}, seed {cfg.seed}",
            **heldout_info,
        },
    )
    result.extra.update(prompts=len(prompts) + len(anchor_prompts), before=before.get("scores", {}), **heldout_info)
    if heldout is not None:
        result.extra.update(heldout_loss=heldout.last, stopped_near_teacher_at=heldout.stopped_at)
        if cfg.heldout_calls:
            result.extra["heldout_call_match"] = heldout.last_calls
    return finish(result, cfg)


if __name__ == "__main__":
    from trainer.cli import main

    main("distill")
