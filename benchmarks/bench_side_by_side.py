"""Benchmark of training the two SFT arms side by side (``experiment hat --train-jobs 2``).

Measured in one run, on the same data and the same base:

- baseline: fixed-SFT, then HSA-SFT, one after the other in this process, torch on every core;
- side by side: the two at once, one process each, the cores shared out (``train_side_by_side``).

Both train ``--steps`` SFT steps per arm on trajectories of the full preset's kind (real rows of
the shipped harness and of HSA variants, about 1,600 tokens at most) from an untrained tiny model
(a step costs the same whatever the weights). The ratio is side by side over one after the other:
below 1, the study's 90 minutes gain from it.

    python benchmarks/bench_side_by_side.py [--steps 20] [--cases 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessctl.experiment.plan import ARMS, apply_overrides, full_plan  # noqa: E402
from harnessctl.experiment.runner import run_study, train_arms  # noqa: E402
from harnessctl.harness import load_harness  # noqa: E402
from harnessctl.models.tiny import build_tiny_model  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="SFT steps per arm")
    ap.add_argument("--cases", type=int, default=200, help="trajectory cases of each dataset")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cores} usable CPUs · {args.steps} SFT steps per arm · {args.cases} cases per dataset")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = tmp / "tiny"
        build_tiny_model(model, load_harness(REPO / "harnesses" / "livecommerce", validate=False))
        plan = apply_overrides(
            full_plan(),
            [
                f"base_model={model}",
                f"data_n={args.cases}",
                "data_variants=50",
                "base.max_steps=1",
                "base.rows=32",
                "base.copy_probe=0",
                "copy.max_steps=0",
                f"sft.max_steps={args.steps}",
                f"sft.heldout_steps={args.steps}",
                f"sft.save_steps={args.steps}",
            ],
        )
        root = tmp / "study"
        run_study(plan, root, progress=False, train_only=True, only_arms=["base"])
        arms = [ARMS["fixed-sft"], ARMS["hsa-sft"]]
        quiet = lambda _m: None  # noqa: E731

        started = time.perf_counter()
        train_arms(plan, arms, root, quiet, False, jobs=1)
        one_after_other = time.perf_counter() - started
        for arm in arms:
            shutil.rmtree(root / "arms" / arm.name)

        started = time.perf_counter()
        train_arms(plan, arms, root, quiet, False, jobs=2)
        side_by_side = time.perf_counter() - started

    print(f"one after the other (every core each): {one_after_other:7.1f} s")
    print(f"side by side (cores shared out):       {side_by_side:7.1f} s")
    print(f"ratio side by side / one after the other: {side_by_side / one_after_other:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
