"""Benchmark of the bundled trainer on the tiny model (CPU), each figure against an in-run baseline.

1. ``train sft`` tokens/s against plain TRL ``SFTTrainer`` on the same model (loaded as the stage
   loads it, so both run right-padded batches without their padding mask; ``bench_padding.py``
   measures that), rows, ``max_length``, batch, precision and steps (goal: >= 0.95x). Both are timed around ``trainer.train()``; tokens are
   TRL's own ``num_tokens`` count (real tokens, padding excluded). The stage adds data checks, sizing,
   progress, manifests, and batches rows of similar length together (``group_by_length``; the
   baseline samples at random, so it pads each batch to its longest row). The two
   alternate over ``--rounds`` and the best of each is compared (the CPU may be shared).
2. ``train rl``: episodes/s and the share of wall time spent generating (the policy sampling turns)
   against the share in the GRPO update (everything outside the rollout function), with the
   rollout's own overhead (runtime, simulator, scoring, variants) as the rest.

Each stage's loss (or reward) by step is printed too: the learning curve behind the figures.

    OMP_NUM_THREADS=1 python benchmarks/bench_train.py [--model DIR] [--sft-steps 30] [--rl-steps 4] [--rounds 2]
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
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

GOAL = 0.95


def build_inputs(work: Path, model: str | None, n: int) -> tuple[Path, Path]:
    from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
    from harnessctl.harness import load_harness
    from harnessctl.models.tiny import build_tiny_model

    harness = load_harness(REPO / "harnesses" / "livecommerce")
    if model is None:
        model_dir = work / "tiny"
        build_tiny_model(model_dir, harness)
    else:
        model_dir = Path(model)
    data = work / "data"
    build_trajectories(harness, data, TrajectorySpec(n=n, variants=10, seed=11), jobs=1)
    return model_dir, data


def bench_sft(work: Path, model_dir: Path, data: Path, steps: int, batch: int, rounds: int) -> float:
    from trl import SFTConfig, SFTTrainer

    from trainer.common import load_model, quiet, training_arguments
    from trainer.data import read_chat_rows, to_dataset
    from trainer.sft import fit_rows, train_sft
    from trainer.stage_configs import load_config

    quiet()
    overrides = {
        "model": str(model_dir),
        "data": str(data),
        "max_steps": steps,
        "per_device_batch_size": batch,
        "save_steps": steps,
        "logging_steps": 1,
        "warmup_steps": 0,
    }
    # Baseline: plain TRL on the same rows and max_length the stage uses.
    cfg = load_config("sft", "tiny-cpu", {**overrides, "out": str(work / "plain")})
    model, tokenizer = load_model(model_dir, cfg)
    rows, info = fit_rows(read_chat_rows(data), tokenizer, model, 0, 0.0)
    dataset = to_dataset(rows)

    def plain_run(out: str) -> float:
        from transformers import set_seed
        from transformers.trainer_callback import PrinterCallback

        set_seed(cfg.seed)
        fresh, _ = load_model(model_dir, cfg)
        args = SFTConfig(
            **{**training_arguments(cfg), "output_dir": out}, max_length=info["max_length"], assistant_only_loss=True
        )
        trainer = SFTTrainer(model=fresh, args=args, train_dataset=dataset, processing_class=tokenizer)
        trainer.remove_callback(PrinterCallback)
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.train()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        tokens = max(float(h.get("num_tokens", 0)) for h in trainer.state.log_history)
        return tokens / seconds, tokens / cpu

    # The machine is shared: alternate baseline and stage over rounds and compare the best of each.
    plain_runs, stage_runs, result = [], [], None
    for r in range(rounds):
        order = ("plain", "stage") if r % 2 == 0 else ("stage", "plain")
        for which in order:
            if which == "plain":
                plain_runs.append(plain_run(str(work / f"plain-{r}")))
            else:
                out = str(work / f"stage-{r}")
                result = train_sft(load_config("sft", "tiny-cpu", {**overrides, "out": out}), progress=False)
                stage_runs.append((result.tokens_per_s, result.tokens / result.cpu_seconds))
    plain_tps, stage_tps = max(x for x, _ in plain_runs), max(x for x, _ in stage_runs)
    plain_cpu, stage_cpu = max(c for _, c in plain_runs), max(c for _, c in stage_runs)
    print(
        "sft rounds, tokens per wall second: plain "
        + ", ".join(f"{x:,.0f}" for x, _ in plain_runs)
        + " | stage "
        + ", ".join(f"{x:,.0f}" for x, _ in stage_runs)
    )
    print(
        f"sft tokens per CPU second (steadier on a shared machine): stage {stage_cpu:,.0f} vs plain {plain_cpu:,.0f} "
        f"-> {stage_cpu / plain_cpu:.3f}x"
    )
    ratio = stage_tps / plain_tps
    print(
        f"sft: stage {stage_tps:,.0f} tokens/s vs plain TRL SFTTrainer {plain_tps:,.0f} tokens/s "
        f"-> {ratio:.3f}x (goal >= {GOAL}x); {steps} steps, batch {batch}, max_length {info['max_length']}"
    )
    print("sft learning curve (step: loss):", ", ".join(f"{int(r['step'])}: {r['loss']:.3f}" for r in result.log))
    return ratio


def bench_rl(work: Path, model_dir: Path, steps: int) -> None:
    from trainer.rl import train_rl
    from trainer.stage_configs import load_config

    cfg = load_config(
        "rl",
        "tiny-cpu",
        {
            "model": str(model_dir),
            "out": str(work / "rl"),
            "max_steps": steps,
            "logging_steps": 1,
            "save_steps": steps,
            "cases": 50,
        },
    )
    result = train_rl(cfg, progress=False)
    x = result.extra
    rest = max(0.0, 1.0 - x["generation_share"] - x["update_share"])
    print(
        f"rl: {x['episodes']} episodes in {result.seconds:.1f} s -> {x['episodes_per_s']:.2f} episodes/s; "
        f"time in generation {x['generation_share']:.0%}, in the GRPO update {x['update_share']:.0%}, "
        f"rest of the rollout (runtime, simulator, scoring, variants) {rest:.0%}"
    )
    print(
        "rl learning curve (step: reward):",
        ", ".join(f"{int(r['step'])}: {r.get('reward', 0):.3f}" for r in result.log),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="checkpoint to start from (default: a fresh tiny model)")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--sft-steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rl-steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="alternating baseline/stage rounds (best of each)")
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir, data = build_inputs(work, a.model, a.rows)
        ratio = bench_sft(work, model_dir, data, a.sft_steps, a.batch, a.rounds)
        bench_rl(work, model_dir, a.rl_steps)
    return 0 if ratio >= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
