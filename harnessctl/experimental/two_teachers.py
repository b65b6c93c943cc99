"""On-policy distillation to two teachers in one run: each prompt names its teacher.

OPD toward the base on general prompts brings instruction following back but moves the agent's
tool choice; distilling back toward the SFT parent on the agent's own steps (the anchor) brings
the agent back and gives part of the general gain up. Done in two phases, each undoes some of the
other. Mixed in one run, every step pulls the student toward the base on its general prompts and
toward the SFT parent on its agent prompts, and the two pulls meet in one set of weights.

TRL's ``DistillationTrainer`` takes one teacher and reads its ``lm_head`` directly in a chunked
loss, so a wrapper model cannot route between two. :class:`TwoTeacherDistillation` keeps TRL's
sampling and loss unchanged: it tags each generated row with its dataset row's ``teacher`` (0: the
trainer's ``teacher_model``, 1: ``anchor_teacher``), and computes the step's loss as TRL's loss
on each teacher's rows against that teacher, summed over TRL's own token count of the whole batch
(so a step weighs every completion token once, as with one teacher).

>>> trainer = make_two_teacher_trainer(model=student, teacher_model=base, anchor_teacher=sft,
...                                    args=args, train_dataset=rows, processing_class=tok)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from trainer.common import check_checkpoint, file_hash, load_model, text_hash
from trainer.distill import DistillHook, DistillRun, check_same_vocabulary, read_prompts

#: The dataset column naming each prompt's teacher (0: the general teacher, 1: the anchor teacher).
TEACHER_COLUMN = "teacher"


def make_two_teacher_trainer(*, anchor_teacher: Any, **kwargs: Any) -> Any:
    """A ``DistillationTrainer`` whose rows with ``teacher == 1`` are distilled toward
    ``anchor_teacher`` and the others toward ``teacher_model``; ``kwargs`` are TRL's."""
    import torch
    from trl import DistillationTrainer

    class TwoTeacherDistillation(DistillationTrainer):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            prepared = self.accelerator.prepare_model(anchor_teacher, evaluation_mode=True)
            self.teachers = (self.teacher_model, prepared)

        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            if TEACHER_COLUMN not in self._signature_columns:  # the column must survive to the batch
                self._signature_columns = [*self._signature_columns, TEACHER_COLUMN]

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            out = super()._generate_and_score_completions(inputs)
            out["teacher_index"] = torch.tensor(
                [int(row.get(TEACHER_COLUMN) or 0) for row in inputs], device=out["prompt_ids"].device
            )
            return out

        def _compute_loss(self, unwrapped_student: Any, inputs: dict[str, Any], num_items_in_batch: Any) -> Any:
            index = inputs["teacher_index"]
            rows = len(index)
            parts = []
            try:
                for k, teacher in enumerate(self.teachers):
                    chosen = (index == k).nonzero().squeeze(-1)
                    if chosen.numel() == 0:
                        continue
                    part = {
                        key: value[chosen]
                        if torch.is_tensor(value) and value.dim() > 0 and len(value) == rows
                        else value
                        for key, value in inputs.items()
                        if key != "teacher_index"
                    }
                    self.teacher_model = teacher
                    parts.append(super()._compute_loss(unwrapped_student, part, num_items_in_batch))
            finally:
                self.teacher_model = self.teachers[0]
            entropy = sum(p[1] for p in parts)
            valid = sum(p[2] for p in parts)
            if num_items_in_batch is not None:  # each part is its token sum over the batch's count
                loss = sum(p[0] for p in parts)
            else:  # each part is a mean over its own tokens: weigh them by their tokens
                loss = sum(p[0] * p[2] for p in parts) / max(valid, 1)
            return loss, entropy, valid

    return TwoTeacherDistillation(**kwargs)


class TwoTeachers(DistillHook):
    """The distillation hook of ``anchor_teacher``: it loads the second teacher, takes
    ``anchor_share`` of the ``n_prompts`` from ``anchor_prompts`` and makes the run's trainer a
    :func:`make_two_teacher_trainer` whose anchor rows follow the run's own."""

    def start(self, run: DistillRun) -> None:
        cfg = run.cfg
        if not getattr(cfg, "anchor_teacher", ""):
            return
        check_checkpoint(cfg.anchor_teacher, "anchor_teacher")
        teacher, tokenizer = load_model(cfg.anchor_teacher, cfg, what="anchor_teacher")
        check_same_vocabulary(run.tokenizer, tokenizer, cfg.anchor_teacher)
        run.agent_teacher = run.notes["anchor_teacher"] = teacher  # held-out rows compare to the agent's teacher
        run.reserved += max(1, round(cfg.n_prompts * cfg.anchor_share))

    def prompts(self, run: DistillRun) -> None:
        cfg = run.cfg
        if not getattr(cfg, "anchor_teacher", ""):
            return
        n = max(1, round(cfg.n_prompts * cfg.anchor_share))
        anchor = read_prompts(cfg.anchor_prompts, n, turn=cfg.prompt_turn, seed=cfg.seed, what="anchor_prompts")
        first = len(run.prompts) + len(run.added)
        run.added.extend(anchor)
        run.data_hash = text_hash(f"{run.data_hash} {file_hash(cfg.anchor_prompts)}")
        run.teachers.update(anchor_teacher=cfg.anchor_teacher, anchor_prompts=len(anchor))
        teacher = run.notes["anchor_teacher"]

        def make_trainer(rows: list[dict[str, Any]], **kwargs: Any) -> Any:
            from datasets import Dataset

            for i, row in enumerate(rows):
                row[TEACHER_COLUMN] = int(first <= i < first + len(anchor))
            return make_two_teacher_trainer(anchor_teacher=teacher, train_dataset=Dataset.from_list(rows), **kwargs)

        run.make_trainer = make_trainer
