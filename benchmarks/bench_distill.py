"""Benchmark of the distillation stage's two additions, each against plain one-teacher OPD run in
the same process on the same model, prompts and steps:

- two teachers in one run (``anchor_teacher``): half the prompts are agent steps distilled toward
  a second teacher. Its student forward and loss run once per teacher's rows, and the agent
  prompts are long (a harness listing, earlier turns), so a step costs more; the anchor phase
  (agent prompts only, one teacher) is timed beside it, since the two-teacher run replaces it;
- held-out rows scored as it trains (``heldout``, 32 rows every 5 steps): the price of the
  ``heldout_loss`` curve and of the anchor phase's stop rule.

Runs alternate over ``--rounds`` and the best of each is compared (the machine may be shared).
The figures are wall seconds per step, as ratios to the baseline's.

    python benchmarks/bench_distill.py [--steps 10] [--rounds 2]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="distillation steps per run")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (best of each)")
    a = parser.parse_args()

    from harnessctl.augment.trajectories import TrajectorySpec, build_trajectories
    from harnessctl.harness import load_harness
    from harnessctl.models.tiny import build_tiny_model
    from trainer.common import quiet
    from trainer.distill import train_distill
    from trainer.stage_configs import load_config

    quiet()
    work = Path(tempfile.mkdtemp(prefix="bench-distill-"))
    harness = load_harness(REPO / "harnesses" / "livecommerce")
    model = work / "tiny"
    build_tiny_model(model, harness)
    data = work / "data"
    build_trajectories(harness, data, TrajectorySpec(n=200, variants=20, seed=5), jobs=1)
    common = {
        "model": str(model),
        "teacher": str(model),
        "n_prompts": 160,
        "max_steps": a.steps,
        "eval_suites": "",
        "save_steps": 10_000,
        "prompt_turn": "any",
    }
    runs = {
        "one teacher (baseline)": {},
        "one teacher, agent prompts (the anchor phase)": {"prompts": str(data / "train.jsonl")},
        "two teachers, half agent prompts": {
            "anchor_teacher": str(model),
            "anchor_prompts": str(data / "train.jsonl"),
        },
        "one teacher + held-out rows every 5 steps": {"heldout": str(data), "heldout_steps": 5},
    }
    best: dict[str, float] = {}
    for r in range(a.rounds):
        for name, extra in runs.items():
            out = work / f"run-{r}-{len(best)}-{abs(hash(name)) % 10_000}"
            cfg = load_config("distill", "tiny-cpu", {**common, **extra, "out": str(out)})
            started = time.perf_counter()
            train_distill(cfg, progress=False)
            per_step = (time.perf_counter() - started) / a.steps
            best[name] = min(best.get(name, per_step), per_step)
            print(f"round {r + 1}: {name}: {per_step:.2f} s/step", flush=True)
    base = best["one teacher (baseline)"]
    print(f"\ndistill, {a.steps} steps, batch 8, best of {a.rounds} (ratio: seconds per step / baseline's)")
    for name, value in best.items():
        print(f"  {name:45} {value:6.2f} s/step  ratio {value / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
