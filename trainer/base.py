"""Stage 0, for a model built from scratch: give it what a pretrained base model has — general
instruction following and the tool-call form — by supervised training on the project's general
corpus (:mod:`trainer.general_corpus`: IFEval-kind instructions on general topics, plain chat,
generic tool use with unrelated tools). Its output is the teacher of stage 2 and the starting
point of stage 1. With a real pretrained checkpoint this stage is skipped. A registered
:class:`BaseHook` may add rows to the corpus and measure the model after training (the
experimental wing's copy rows and copy probe).

>>> cfg = load_config("base", "tiny-cpu", {"out": "out/base"})   # doctest: +SKIP
>>> train_base(cfg).out                                          # doctest: +SKIP
'out/base'
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.extensions import load_extensions
from harnessctl.harness import load_harness
from harnessctl.harness.errors import HarnessError
from harnessctl.models.tiny import build_tiny_model
from trainer.base_config import BaseStageConfig
from trainer.cli import main
from trainer.common import TrainError, TrainResult, finish, load_model, prepare_out, run_trainer, setup, text_hash
from trainer.general_corpus import general_rows
from trainer.sft import fit_rows, sft_trainer

#: A share of the corpus's rows and the function that draws each of them from the corpus's stream.
ExtraRows = tuple[float, Callable[[random.Random], dict[str, Any]]]


class BaseHook:
    """One extension of stage 0, registered with :func:`register_base_hook`; each method does
    nothing here."""

    def extra_rows(self, cfg: BaseStageConfig) -> ExtraRows | None:
        """Rows the corpus draws besides its own (the first hook that gives some is used)."""
        return None

    def label(self, cfg: BaseStageConfig) -> str:
        """What the corpus's label in ``train.json`` adds (``", 50% copying rows"``)."""
        return ""

    def finish(self, cfg: BaseStageConfig, result: TrainResult) -> None:
        """Training is done (or interrupted: ``result.interrupted``); add to ``result.extra``."""


_HOOKS: list[BaseHook] = []


def register_base_hook(hook: BaseHook) -> None:
    """Run ``hook`` in every later stage-0 run, after the hooks registered before it."""
    _HOOKS.append(hook)


def base_hooks() -> list[BaseHook]:
    """The registered hooks, in order (loading the installed extensions first)."""
    load_extensions()
    return list(_HOOKS)


def train_base(cfg: BaseStageConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Run stage 0: build the tiny model when ``cfg.model`` is empty, then train it on the corpus."""
    setup(cfg)
    resume_from = prepare_out(cfg, resume)
    parent = cfg.model
    if not parent:
        parent = str(Path(cfg.out) / "init")
        if not (Path(parent) / "config.json").is_file():
            try:
                harness = load_harness(cfg.harness, validate=False)
            except (HarnessError, OSError) as e:
                raise TrainError(f"--harness {cfg.harness}: {e}") from None
            build_tiny_model(parent, harness)
    model, tokenizer = load_model(parent, cfg, what="--model")
    hooks = base_hooks()
    share, maker = next((extra for hook in hooks if (extra := hook.extra_rows(cfg))), (0.0, None))
    rows = general_rows(cfg.rows, seed=cfg.seed, extra_share=share, extra_row=maker)
    kept, info = fit_rows(rows, tokenizer, model, cfg.max_length, max_share=0.0)
    trainer = sft_trainer(model, tokenizer, kept, cfg, info["max_length"])
    corpus_hash = text_hash(json.dumps(rows, sort_keys=True))
    label = f"general corpus, {cfg.rows} rows, seed {cfg.seed}" + "".join(hook.label(cfg) for hook in hooks)
    result = run_trainer(
        trainer,
        cfg,
        parent=parent,
        data_hash=corpus_hash,
        resume_from=resume_from,
        progress=progress,
        extra_manifest={"data": label, **info},
    )
    result.extra.update(info)
    for hook in hooks:
        hook.finish(cfg, result)
    return finish(result, cfg)


if __name__ == "__main__":
    main("base", train_base)
