"""Benchmark of ``precision: auto`` on this machine: SFT steps of the tiny model in bf16 autocast
against fp32, on the same rows, batch and steps, alternating over ``--rounds`` (best of each).

``auto`` picks bf16 on a CPU that reports AVX512-BF16 or AMX tiles and fp32 otherwise; this prints
what this CPU reports, what ``auto`` picks here, and the measured ratio, so the rule can be checked
on each kind of machine a study runs on (its step times differ by about 2x between two of them).

    OMP_NUM_THREADS=2 python benchmarks/bench_precision.py [--steps 12] [--rounds 2] [--batch 8]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def time_sft(model_dir: Path, data: Path, out: Path, precision: str, steps: int, batch: int) -> tuple[float, float]:
    """Seconds per step and tokens per second of ``steps`` SFT steps in ``precision``."""
    from trainer.sft import train_sft
    from trainer.stage_configs import load_config

    cfg = load_config(
        "sft",
        "tiny-cpu",
        {
            "model": str(model_dir),
            "data": str(data),
            "out": str(out),
            "max_steps": steps,
            "per_device_batch_size": batch,
            "save_steps": steps,
            "logging_steps": steps,
            "warmup_steps": 0,
            "heldout_rows": 0,
            "precision": precision,
        },
    )
    result = train_sft(cfg, progress=False)
    return result.seconds / result.steps, result.tokens_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()

    import torch
    from bench_train import build_inputs

    from trainer.common import hardware
    from trainer.config import TrainConfig

    here = hardware(TrainConfig(device="cpu", precision="auto"))
    avx512_bf16 = getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)()
    amx = getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
    print(f"{here['processor']}, {here['threads']} threads: AVX512-BF16 {avx512_bf16}, AMX {amx}")
    print(f"precision: auto picks {here['precision']} here")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir, data = build_inputs(work, None, 200)
        runs: dict[str, list[tuple[float, float]]] = {"fp32": [], "bf16": []}
        for r in range(args.rounds):
            order = ("fp32", "bf16") if r % 2 == 0 else ("bf16", "fp32")
            for precision in order:
                runs[precision].append(
                    time_sft(model_dir, data, work / f"{precision}-{r}", precision, args.steps, args.batch)
                )
    for precision, rows in runs.items():
        print(f"{precision}: " + ", ".join(f"{s:.2f} s/step ({t:,.0f} tokens/s)" for s, t in rows))
    fp32, bf16 = min(s for s, _ in runs["fp32"]), min(s for s, _ in runs["bf16"])
    faster = "bf16" if bf16 < fp32 else "fp32"
    print(
        f"bf16 autocast vs fp32: {fp32 / bf16:.2f}x the speed ({args.steps} SFT steps, batch {args.batch}); "
        f"faster here: {faster}; auto picks {here['precision']}"
        + (" (agrees)" if faster == here["precision"] else " (DISAGREES: the rule is wrong for this CPU)")
    )


if __name__ == "__main__":
    main()
