"""Stage 0, for a model built from scratch: give it what a pretrained base model has — general
instruction following and the tool-call form — by supervised training on the project's general
corpus (:mod:`trainer.general_corpus`: IFEval-kind instructions on general topics, plain chat,
generic tool use with unrelated tools, and with ``copy_share`` rows that can only be answered by
copying). Its output is the teacher of stage 2 and the starting point of stage 1. With a real
pretrained checkpoint this stage is skipped. After training, the copy probe
(:mod:`trainer.probes`) records in ``train.json`` whether the base copies a fresh code.

>>> cfg = load_config("base", "tiny-cpu", {"out": "out/base"})   # doctest: +SKIP
>>> train_base(cfg).out                                          # doctest: +SKIP
'out/base'
"""

from __future__ import annotations

import json
from pathlib import Path

from trainer.common import TrainResult, load_model, prepare_out, run_trainer, setup, text_hash
from trainer.config import BaseStageConfig
from trainer.general_corpus import general_rows, parse_copy_mix
from trainer.sft import fit_rows, sft_trainer


def train_base(cfg: BaseStageConfig, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Run stage 0: build the tiny model when ``cfg.model`` is empty, then train it on the corpus."""
    from trainer.common import TrainError, finish

    setup(cfg)
    resume_from = prepare_out(cfg, resume)
    parent = cfg.model
    if not parent:
        parent = str(Path(cfg.out) / "init")
        if not (Path(parent) / "config.json").is_file():
            from harnessctl.harness import load_harness
            from harnessctl.harness.errors import HarnessError
            from harnessctl.models.tiny import build_tiny_model

            try:
                harness = load_harness(cfg.harness, validate=False)
            except (HarnessError, OSError) as e:
                raise TrainError(f"--harness {cfg.harness}: {e}") from None
            build_tiny_model(parent, harness)
    model, tokenizer = load_model(parent, cfg, what="--model")
    rows = general_rows(cfg.rows, seed=cfg.seed, copy_share=cfg.copy_share, copy_weights=parse_copy_mix(cfg.copy_mix))
    kept, info = fit_rows(rows, tokenizer, model, cfg.max_length, max_share=0.0)
    trainer = sft_trainer(model, tokenizer, kept, cfg, info["max_length"])
    corpus_hash = text_hash(json.dumps(rows, sort_keys=True))
    result = run_trainer(
        trainer,
        cfg,
        parent=parent,
        data_hash=corpus_hash,
        resume_from=resume_from,
        progress=progress,
        extra_manifest={"data": _corpus_label(cfg), **info},
    )
    result.extra.update(info)
    if cfg.copy_probe and not result.interrupted:
        record_copy_probe(result, cfg.copy_probe)
    return finish(result, cfg)


def record_copy_probe(result: TrainResult, n: int) -> None:
    """Run the copy probe on the saved model and record it in the result and its train.json: whether
    the base reads a fresh code off the conversation, which no later stage teaches."""
    from accelerate import PartialState

    from trainer.common import read_manifest, write_manifest
    from trainer.probes import copy_probe

    if not PartialState().is_main_process:
        return
    result.extra["copy_probe"] = copy_probe(result.out, n=n)
    manifest = read_manifest(result.out) or {}
    write_manifest(result.out, {**manifest, "copy_probe": result.extra["copy_probe"]})


def _corpus_label(cfg: BaseStageConfig) -> str:
    label = f"general corpus, {cfg.rows} rows, seed {cfg.seed}"
    if not cfg.copy_share:
        return label
    return label + f", {cfg.copy_share:.0%} copying rows" + (f" ({cfg.copy_mix})" if cfg.copy_mix else "")


if __name__ == "__main__":
    from trainer.cli import main

    main("base")
