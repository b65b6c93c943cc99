"""Held-out agent rows scored while a stage trains on something else.

On-policy distillation trains on prompts and the student's own samples; what it costs the agent
shows on the SFT data's held-out trajectories: the loss on their assistant tokens, the number SFT
logs as ``eval_loss``. :class:`HeldoutScorer` measures it for any model through TRL's own
``SFTTrainer`` evaluation (same chat template, same assistant-only mask), and
:class:`HeldoutLoss` logs it every few steps as ``heldout_loss`` and can stop the run once the
student is back within a share of its teacher's loss on the same rows. The anchor phase of the
HAT study stops that way: sized on held-out rows rather than on the suites' scores.

>>> scorer = HeldoutScorer.from_path("out/datasets/hsa", 32, tokenizer, cfg)   # doctest: +SKIP
>>> scorer.loss(model)                                                          # doctest: +SKIP
0.771
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from trainer.common import TrainError, on_cpu, precision
from trainer.data import plan_lengths, read_chat_rows, to_dataset, token_lengths


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
    from harnessctl.augment.trajectories import chat_template_inputs

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
    from harnessctl.models.toolcall_text import parse_tool_calls

    _, calls, _ = parse_tool_calls(text)
    if not calls:
        return None
    skill = (calls[0].arguments or {}).get("name")
    return calls[0].name, str(skill) if skill is not None else None


def heldout_callback(scorer: HeldoutScorer, every: int, stop_at: float | None, calls: bool = False) -> Any:
    """A ``TrainerCallback`` that logs ``heldout_loss`` (and with ``calls``,
    ``heldout_call_match``) at step 0 and every ``every`` steps, and stops training once the loss
    is at or below ``stop_at`` (None: never)."""
    from transformers import TrainerCallback

    class HeldoutLoss(TrainerCallback):
        def __init__(self) -> None:
            self.trainer: Any = None  # set by the stage: the trainer whose log the loss goes to
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
            Trainer.log(self.trainer, logs)
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
