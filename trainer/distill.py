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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.extensions import load_extensions
from trainer.cli import main
from trainer.common import (
    TrainError,
    TrainResult,
    check_checkpoint,
    evaluate,
    file_hash,
    finish,
    load_model,
    peft_config,
    prepare_out,
    run_trainer,
    setup,
    start_base,
    text_hash,
    training_arguments,
)
from trainer.data import check_row
from trainer.distill_config import DistillStageConfig
from trainer.general_corpus import general_prompts


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


@dataclass
class DistillRun:
    """A distillation run as :func:`train_distill` builds it, handed to each registered
    :class:`DistillHook` in turn: hooks read it and add to it (prompts for another teacher, a
    trainer factory, callbacks, what the manifest and the summary record)."""

    cfg: DistillStageConfig
    model: Any
    tokenizer: Any
    teacher: Any
    #: The teacher whose agent the run is held to (a hook with a second teacher may name it).
    agent_teacher: Any = None
    #: Prompts a hook takes out of ``n_prompts`` for itself (the run's own prompts are the rest).
    reserved: int = 0
    prompts: list[DistillPrompt] = field(default_factory=list)
    #: Prompts hooks add after the run's own, in order (their rows follow the own prompts' rows).
    added: list[DistillPrompt] = field(default_factory=list)
    data_hash: str = ""
    #: ``make_trainer(rows, **kwargs)``: TRL's ``DistillationTrainer`` unless a hook sets another.
    make_trainer: Callable[..., Any] | None = None
    #: The trainer, once made (callbacks that log through it read it here).
    trainer: Any = None
    callbacks: list[Any] = field(default_factory=list)
    #: Manifest entries: about teachers (after ``teacher``), and the rest (after ``data``).
    teachers: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    #: What a hook keeps between its calls in this run, under a key of its own.
    notes: dict[str, Any] = field(default_factory=dict)


class DistillHook:
    """One extension of stage 2, registered with :func:`register_distill_hook`: each method is
    called at one point of :func:`train_distill` with the :class:`DistillRun`, and does nothing
    here. The experimental wing's second teacher and held-out rows are two."""

    def start(self, run: DistillRun) -> None:
        """The student and teacher are loaded; no prompt is read yet (set ``run.reserved``)."""

    def prompts(self, run: DistillRun) -> None:
        """The run's own prompts are read (``run.prompts``, ``run.data_hash``); add to ``run.added``."""

    def ready(self, run: DistillRun) -> None:
        """Just before the trainer is made: add ``run.callbacks``, ``run.manifest`` entries."""

    def finish(self, run: DistillRun, result: TrainResult) -> None:
        """Training is done: add to ``result.extra``."""


_HOOKS: list[DistillHook] = []


def register_distill_hook(hook: DistillHook) -> None:
    """Run ``hook`` in every later distillation run, after the hooks registered before it."""
    _HOOKS.append(hook)


def distill_hooks() -> list[DistillHook]:
    """The registered hooks, in order (loading the installed extensions first)."""
    load_extensions()
    return list(_HOOKS)


def train_distill(cfg: DistillStageConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Run stage 2 as ``cfg`` says; ``extra`` holds the eval scores before training."""
    from datasets import Dataset
    from trl import DistillationConfig, DistillationTrainer

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
    hooks = distill_hooks()
    run = DistillRun(cfg, model, tokenizer, teacher, agent_teacher=teacher)
    for hook in hooks:
        hook.start(run)
    n_general = cfg.n_prompts - run.reserved
    if cfg.prompts:
        run.prompts = read_prompts(cfg.prompts, n_general, turn=cfg.prompt_turn, seed=cfg.seed)
        run.data_hash = file_hash(cfg.prompts)
    else:
        run.prompts = [
            DistillPrompt([{"role": "user", "content": p}]) for p in general_prompts(n_general, seed=cfg.seed)
        ]
        run.data_hash = text_hash(json.dumps([p.messages for p in run.prompts]))
    for hook in hooks:
        hook.prompts(run)
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
    for hook in hooks:
        hook.ready(run)
    rows = prompt_rows(run.prompts + run.added, tokenizer)
    make_trainer = run.make_trainer or (
        lambda rows, **kw: DistillationTrainer(train_dataset=Dataset.from_list(rows), **kw)
    )
    run.trainer = make_trainer(
        rows,
        model=model,
        teacher_model=teacher,
        args=args,
        processing_class=tokenizer,
        peft_config=peft_config(cfg, model),
    )
    for callback in run.callbacks:
        run.trainer.add_callback(callback)
    result = run_trainer(
        run.trainer,
        cfg,
        parent=cfg.model,
        data_hash=run.data_hash,
        resume_from=resume_from,
        progress=progress,
        extra_manifest={
            "teacher": cfg.teacher,
            **run.teachers,
            "data": cfg.prompts or f"general prompts, {len(run.prompts)}, seed {cfg.seed}",
            **run.manifest,
        },
    )
    result.extra.update(prompts=len(run.prompts) + len(run.added), before=before.get("scores", {}))
    for hook in hooks:
        hook.finish(run, result)
    return finish(result, cfg)


if __name__ == "__main__":
    main("distill", train_distill)
