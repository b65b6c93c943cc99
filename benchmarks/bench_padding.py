"""Benchmark of what the stages do with padding, against padded batches as TRL and transformers
make them: training steps of the tiny model on the same rows, seed, batch and steps, alternating
over ``--rounds`` (best of each; the machine may be shared).

- ``--stage sft`` (trajectory rows of about 1,200 tokens, length-grouped batches of 8): the padding
  mask of right-padded batches dropped (``drop_right_padding_mask``), so attention takes its
  causal path, against the same batches with their mask.
- ``--stage base`` (stage 0's general corpus with half copy rows, as in the study's copy phase;
  random batches of 16): ``padding_free`` batches, each row attending only to itself, against
  padded ones; ``--copy-share 0`` for the general rows alone.

It prints seconds per step of each, the ratio, and both learning curves: neither change alters
what a loss reads, so the losses must agree to float precision.

    OMP_NUM_THREADS=2 python benchmarks/bench_padding.py [--stage sft|base] [--copy-share 0.5] [--steps 8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def time_steps(
    stage: str, model_dir: Path, data: Path, out: Path, steps: int, padded: bool, copy_share: float = 0.5
) -> tuple[float, list]:
    """Seconds per step (after the first) and the loss by step of ``steps`` steps of ``stage``."""
    from transformers import set_seed
    from transformers.trainer_callback import PrinterCallback

    from harnessctl.experimental.copy_rows import copy_corpus
    from trainer.common import load_model, quiet
    from trainer.data import read_chat_rows
    from trainer.sft import fit_rows, sft_trainer
    from trainer.stage_configs import load_config

    quiet()
    cfg = load_config(
        stage,
        "tiny-cpu",
        {
            "model": str(model_dir),
            **({"data": str(data)} if stage == "sft" else {"copy_share": copy_share, "padding_free": not padded}),
            "out": str(out),
            "max_steps": steps,
            "save_steps": steps,
            "logging_steps": 1,
            "warmup_steps": 0,
        },
    )
    set_seed(cfg.seed)
    # the baseline: transformers as it is, mask and all
    model, tokenizer = load_model(model_dir, cfg, drop_padding_mask=not padded)
    if stage == "sft":
        rows, info = fit_rows(read_chat_rows(data), tokenizer, model, 0, 0.0)
    else:
        general = copy_corpus(cfg.rows, seed=cfg.seed, share=cfg.copy_share)
        rows, info = fit_rows(general, tokenizer, model, cfg.max_length, max_share=0.0)
    trainer = sft_trainer(model, tokenizer, rows, cfg, info["max_length"])
    trainer.remove_callback(PrinterCallback)
    stamps: list[float] = []

    from transformers import TrainerCallback

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    trainer.add_callback(Stamp())
    trainer.train()
    losses = [round(h["loss"], 4) for h in trainer.state.log_history if "loss" in h]
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1), losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("sft", "base"), default="sft")
    parser.add_argument("--copy-share", type=float, default=0.5, help="base: the share of copy rows")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from bench_train import build_inputs

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir, data = build_inputs(work, None, 200)
        runs: dict[str, list[float]] = {"padded": [], "stage": []}
        curves: dict[str, list] = {}
        for r in range(args.rounds):
            order = ("padded", "stage") if r % 2 == 0 else ("stage", "padded")
            for which in order:
                seconds, losses = time_steps(
                    args.stage, model_dir, data, work / f"{which}-{r}", args.steps, which == "padded", args.copy_share
                )
                runs[which].append(seconds)
                curves[which] = losses
    for which, rows in runs.items():
        print(f"{which}: " + ", ".join(f"{s:.2f} s/step" for s in rows) + f"  losses {curves[which]}")
    padded, stage = min(runs["padded"]), min(runs["stage"])
    what = "padding mask dropped" if args.stage == "sft" else "padding-free batches"
    print(f"{args.stage}, {what}: {stage:.2f} s/step vs {padded:.2f} padded -> {padded / stage:.2f}x faster")
    worst = max(abs(a - b) for a, b in zip(curves["padded"], curves["stage"], strict=True))
    print(f"largest loss difference between the two: {worst:.4f}")


if __name__ == "__main__":
    main()
