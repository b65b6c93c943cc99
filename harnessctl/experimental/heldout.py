"""Held-out agent rows scored while a stage trains on something else.

On-policy distillation trains on prompts and the student's own samples; what it costs the agent
shows on the SFT data's held-out trajectories: the loss on their assistant tokens, the number SFT
logs as ``eval_loss``. :class:`HeldoutScorer` measures it for any model through TRL's own
``SFTTrainer`` evaluation (same chat template, same assistant-only mask), and
:class:`HeldoutLoss` logs it every few steps as ``heldout_loss`` and can stop the run once the
student is back within a share of its teacher's loss on the same rows. The anchor phase of the
HAT study stops that way: sized on held-out rows rather than on the suites' scores.
:class:`HeldoutRows` is the distillation hook of the ``heldout`` fields, and :func:`check_seconds`
what its checks add to a study's estimate.

>>> scorer = HeldoutScorer.from_path("out/datasets/hsa", 32, tokenizer, cfg)   # doctest: +SKIP
>>> scorer.loss(model)                                                          # doctest: +SKIP
0.771
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.augment.trajectories import chat_template_inputs
from harnessctl.models.toolcall_text import parse_tool_calls
from trainer.common import TrainError, TrainResult, load_model, on_cpu, precision
from trainer.data import plan_lengths, read_chat_rows, to_dataset, token_lengths
from trainer.distill import DistillHook, DistillRun


class HeldoutScorer:
    """The mean assistant-token loss of a model on fixed chat rows (``messages`` and ``tools``)."""

    def __init__(self, rows: list[dict[str, Any]], tokenizer: Any, cfg: Any, max_positions: int) -> None:
        # a copy: TRL may give the tokenizer a training chat template, and the stage keeps its own
        self.tokenizer = copy.deepcopy(tokenizer)
        self.tokenizer.padding_side = "right"
        lengths = token_lengths(rows, self.tokenizer)
        self.max_length = plan_lengths(lengths, requested=0, max_positions=max_positions, max_share=1.0).max_length
        self.rows = [r for r, n in zip(rows, lengths, strict=True) if n <= self.max_length]
        if not self.rows:
            raise TrainError(f"heldout: none of its {len(rows)} rows fits the model's {max_positions} positions")
        self.cfg = cfg
        self._calls: list[tuple[str, tuple[str, str | None]]] | None = None

    @classmethod
    def from_path(cls, path: str | Path, n: int, tokenizer: Any, cfg: Any, max_positions: int = 0) -> HeldoutScorer:
        """The first ``n`` rows of an SFT dataset folder's ``validation.jsonl``, or of a ``.jsonl`` file."""
        rows = read_chat_rows(path, "validation", what="heldout")[:n]
        return cls(rows, tokenizer, cfg, max_positions)

    def call_match(self, model: Any, max_new_tokens: int = 48) -> float:
        """The share of the rows' tool-calling turns whose first call ``model`` makes as the
        trajectory did, greedily, from the turns before it: the same tool, and for a skill load the
        same skill. Where the loss averages every assistant token, this is the choice alone."""
        import torch

        turns = self._call_prompts()
        if not turns:
            return 0.0
        tok = copy.copy(self.tokenizer)
        tok.padding_side = "left"
        size = max(1, self.cfg.per_device_batch_size)
        was_training = model.training
        model.eval()
        hits = 0
        try:
            for start in range(0, len(turns), size):
                batch = turns[start : start + size]
                enc = tok([text for text, _ in batch], return_tensors="pt", padding=True, add_special_tokens=False)
                enc = enc.to(model.device)
                with torch.no_grad():
                    out = model.generate(
                        **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id
                    )
                answers = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=False)
                hits += sum(first_call(text) == want for text, (_, want) in zip(answers, batch, strict=True))
        finally:
            model.train(was_training)
        return round(hits / len(turns), 4)

    def _call_prompts(self) -> list[tuple[str, tuple[str, str | None]]]:
        """Each tool-calling turn's prompt text and its call, rendered once: the rows do not change
        between the checks of a run."""
        if self._calls is None:
            self._calls = [
                (
                    self.tokenizer.apply_chat_template(
                        before, tools=row["tools"], add_generation_prompt=True, tokenize=False
                    ),
                    want,
                )
                for row in self.rows
                for before, want in call_turns(row)
            ]
        return self._calls

    def loss(self, model: Any) -> float:
        """``model``'s loss on the rows (no gradient; the model's train/eval mode is restored)."""
        from trl import SFTConfig, SFTTrainer

        prec = precision(self.cfg)
        args = SFTConfig(
            output_dir=self.cfg.out,  # evaluation writes nothing there
            per_device_eval_batch_size=max(1, self.cfg.per_device_batch_size),
            max_length=self.max_length,
            assistant_only_loss=True,
            bf16=prec == "bf16",
            fp16=prec == "fp16",
            use_cpu=on_cpu(self.cfg),
            report_to="none",
            disable_tqdm=True,
            dataloader_num_workers=0,
            dataset_num_proc=None,
        )
        was_training = model.training
        dataset = to_dataset(self.rows)
        scorer = SFTTrainer(
            model=model, args=args, train_dataset=dataset, eval_dataset=dataset, processing_class=self.tokenizer
        )
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        scorer.remove_callback(PrinterCallback)
        scorer.remove_callback(ProgressCallback)
        try:
            return round(float(scorer.evaluate()["eval_loss"]), 4)
        finally:
            model.train(was_training)


def call_turns(row: dict[str, Any]) -> list[tuple[list[dict[str, Any]], tuple[str, str | None]]]:
    """Each assistant turn of ``row`` that calls a tool, as ``(the messages before it, its first
    call)``, the messages as the chat template takes them
    (:func:`~harnessctl.augment.trajectories.chat_template_inputs`); a call is ``(tool name, its
    "name" argument)``, so a skill load is told by the skill it loads.

    >>> row = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "",
    ...        "tool_calls": [{"function": {"name": "load_skill", "arguments": '{"name": "pricing"}'}}]}]}
    >>> call_turns(row)[0][1]
    ('load_skill', 'pricing')
    """
    messages, _ = chat_template_inputs({"messages": row["messages"], "tools": row.get("tools") or []})
    out = []
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        fn = calls[0].get("function") or {}
        args = fn.get("arguments")
        skill = args.get("name") if isinstance(args, dict) else None
        out.append((messages[:i], (str(fn.get("name")), str(skill) if skill is not None else None)))
    return out


def first_call(text: str) -> tuple[str, str | None] | None:
    """The first tool call in a model's text, as :func:`call_turns` names one (None: no call).

    >>> first_call('<tool_call>{"name": "load_skill", "arguments": {"name": "pricing"}}</tool_call>')
    ('load_skill', 'pricing')
    """
    _, calls, _ = parse_tool_calls(text)
    if not calls:
        return None
    skill = (calls[0].arguments or {}).get("name")
    return calls[0].name, str(skill) if skill is not None else None


def heldout_callback(
    scorer: HeldoutScorer,
    every: int,
    stop_at: float | None,
    calls: bool = False,
    *,
    trainer: Callable[[], Any],
) -> Any:
    """A ``TrainerCallback`` that logs ``heldout_loss`` (and with ``calls``,
    ``heldout_call_match``) at step 0 and every ``every`` steps, and stops training once the loss
    is at or below ``stop_at`` (None: never); ``trainer()`` is the trainer whose log the loss goes
    to (made after the callback)."""
    from transformers import TrainerCallback

    class HeldoutLoss(TrainerCallback):
        def __init__(self) -> None:
            self.stopped_at: int | None = None
            self.last: float | None = None
            self.last_calls: float | None = None

        def _score(self, state: Any, control: Any, model: Any) -> None:
            from transformers import Trainer

            self.last = scorer.loss(model)
            logs = {"heldout_loss": self.last}
            if calls:
                self.last_calls = logs["heldout_call_match"] = scorer.call_match(model)
            # Trainer.log resets should_log, which this step's own loss log (written after
            # on_step_end) needs; and the base class's log, since TRL's trainers fold their
            # pending step metrics into whatever is logged next
            should_log = control.should_log
            Trainer.log(trainer(), logs)
            control.should_log = should_log
            if stop_at is not None and self.last <= stop_at and state.global_step > 0:
                self.stopped_at = state.global_step
                control.should_training_stop = True

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            if state.global_step == 0:
                self._score(state, control, model)

        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step % every == 0 or state.global_step >= state.max_steps:
                self._score(state, control, model)

    return HeldoutLoss()


class HeldoutRows(DistillHook):
    """The distillation hook of ``heldout``: it scores the agent's teacher on the rows once, logs
    the student's loss on them as it trains and, with ``stop_near_teacher``, stops once the student
    is back near the teacher; the manifest and the summary record what it measured."""

    def ready(self, run: DistillRun) -> None:
        cfg = run.cfg
        if not getattr(cfg, "heldout", ""):
            return
        positions = int(getattr(run.model.config, "max_position_embeddings", 0) or 0)
        scorer = HeldoutScorer.from_path(cfg.heldout, cfg.heldout_rows, run.tokenizer, cfg, positions)
        teacher_loss = scorer.loss(run.agent_teacher)
        stop_at = round(teacher_loss * (1 + cfg.stop_near_teacher), 4) if cfg.stop_near_teacher else None
        info = {"heldout": cfg.heldout, "heldout_rows": len(scorer.rows), "heldout_teacher_loss": teacher_loss}
        if stop_at is not None:
            info["heldout_stop_at"] = stop_at
        if cfg.heldout_calls:
            info["heldout_teacher_call_match"] = scorer.call_match(run.agent_teacher)
        callback = heldout_callback(scorer, cfg.heldout_steps, stop_at, cfg.heldout_calls, trainer=lambda: run.trainer)
        run.notes["heldout"] = (callback, info)
        run.callbacks.append(callback)
        run.manifest.update(info)

    def finish(self, run: DistillRun, result: TrainResult) -> None:
        if "heldout" not in run.notes:
            return
        callback, info = run.notes["heldout"]
        result.extra.update(info)
        result.extra.update(heldout_loss=callback.last, stopped_near_teacher_at=callback.stopped_at)
        if run.cfg.heldout_calls:
            result.extra["heldout_call_match"] = callback.last_calls


def heldout_checks(cfg: Any) -> int:
    """How often a distillation phase scores its held-out rows: its teacher once, the student at
    step 0, every ``heldout_steps`` and at the last step (0 without ``heldout`` rows).

    >>> cfg = type("Cfg", (), {"heldout": "data/hsa", "max_steps": 60, "heldout_steps": 5})
    >>> heldout_checks(cfg), heldout_checks(type("Cfg", (), {"heldout": ""}))
    (14, 0)
    """
    if not getattr(cfg, "heldout", ""):
        return 0
    steps, every = int(cfg.max_steps), max(1, int(cfg.heldout_steps))
    return 2 + steps // every + (1 if steps % every else 0)


def heldout_check_seconds(cfg: Any, model_dir: Path, rows: int) -> float:
    """Seconds one check of ``rows`` of ``cfg``'s held-out rows takes ``model_dir``'s model (the
    loss, and with ``heldout_calls`` the call match), timed on a second check of the rows there
    are (the first carries the warm-up) and scaled to ``rows``: a probe's dataset holds fewer."""
    model, tokenizer = load_model(model_dir, cfg)
    positions = int(getattr(model.config, "max_position_embeddings", 0) or 0)
    scorer = HeldoutScorer.from_path(cfg.heldout, cfg.heldout_rows, tokenizer, cfg, positions)

    def check() -> None:
        scorer.loss(model)
        if cfg.heldout_calls:
            scorer.call_match(model)

    check()
    started = time.perf_counter()
    check()
    return (time.perf_counter() - started) * rows / len(scorer.rows)


def planned_heldout_rows(cfg: Any, probe_n: int, plan_n: int) -> int:
    """The held-out rows ``cfg`` scores in the plan: its ``heldout_rows``, or fewer where the
    plan's validation file is smaller (the probe's, ``probe_n`` cases, scaled to ``plan_n``)."""
    probe_rows = len(read_chat_rows(cfg.heldout, "validation", what="heldout"))
    return max(1, min(int(cfg.heldout_rows), round(probe_rows * plan_n / max(probe_n, 1))))


def check_seconds(
    cfg: Any, model_dir: Path, probe_cases: int, plan_cases: int, say: Any, arm: str, phase: str
) -> float:
    """The seconds a phase's held-out checks add to a study's estimate: one check timed on the
    probe's ``model_dir`` model, scaled to the rows the plan scores, times the checks it makes."""
    checks = heldout_checks(cfg)
    if not checks:
        return 0.0
    say(f"timing {arm}'s held-out scoring ({phase}: {checks} checks)")
    rows = planned_heldout_rows(cfg, probe_cases, plan_cases)
    return checks * heldout_check_seconds(cfg, model_dir, rows)
