"""Benchmark of HSA: ``augment --n 50`` plus 5,000 oracle trajectories (goal: under 10 s on 2 cores).

Measured in one run, each with a baseline measured alongside it:

1. ``augment --n 50``: 50 variant folders + manifests + index (what the command does, without
   process start-up), against the baseline of writing the *canonical* harness 50 times with the
   same ``save_harness`` (validation and read-back included). The ratio is what augmentation
   adds on top of writing folders at all.
2. 5,000 oracle trajectories under 50 in-memory variants (30 % canonical, 10 % validation),
   against the baseline of 5,000 canonical oracle episodes scored, one process, no augmentation
   and no output. The ratio is the cost of variants, per-case skill hiding, rejection checks,
   JSONL writing and the ledger — after dividing the work over ``--jobs`` processes.

    python benchmarks/bench_augment.py [--n 50] [--trajectories 5000] [--jobs 2]
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

from harnessctl.augment import TrajectorySpec, VariantSpec, build_trajectories, feasible_floors, write_variants  # noqa: E402
from harnessctl.harness import load_harness, render_harness  # noqa: E402
from harnessctl.harness.save import save_harness  # noqa: E402
from harnessctl.runtime.loop import run_episode  # noqa: E402
from harnessctl.sim.cases import generate_cases  # noqa: E402
from harnessctl.sim.oracle import OracleModel  # noqa: E402
from harnessctl.sim.scorer import score_episode  # noqa: E402

GOAL_S = 10.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="variants to write")
    ap.add_argument("--trajectories", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (the goal is stated for 2 cores)")
    ap.add_argument("--harness", default=str(REPO / "harnesses" / "livecommerce"))
    args = ap.parse_args()

    source = load_harness(args.harness)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"harness {source.name} {source.version} · {cpus} usable CPUs · --jobs {args.jobs}")

    t = time.perf_counter()
    floors = feasible_floors(source)
    t_floors = time.perf_counter() - t
    print(f"feasibility floors (oracle-measured, once per harness): {t_floors:.2f} s {floors}")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # 1. variant folders vs writing the canonical harness as many times.
        t = time.perf_counter()
        for i in range(args.n):
            save_harness(source, tmp / "canonical" / f"c{i:04d}")
        t_base_write = time.perf_counter() - t
        t = time.perf_counter()
        result = write_variants(source, tmp / "variants", VariantSpec(seed=0), args.n, jobs=args.jobs)
        t_variants = time.perf_counter() - t
        assert len(result.written) == args.n

        # 2. trajectories vs canonical oracle episodes.
        cases = generate_cases(args.trajectories, seed=0, faults=0.2)
        oracle = OracleModel()
        rendered = render_harness(source)
        t = time.perf_counter()
        for case in cases:
            score_episode(run_episode(source, case, oracle, rendered=rendered), case)
        t_base_episodes = time.perf_counter() - t
        t = time.perf_counter()
        summary = build_trajectories(
            source, tmp / "data", TrajectorySpec(n=args.trajectories, seed=0, variants=args.n), jobs=args.jobs
        )
        t_traj = time.perf_counter() - t

    total = t_variants + t_traj
    print()
    print(f"augment --n {args.n}:              {t_variants:6.2f} s   ({t_variants / args.n * 1000:.0f} ms/variant)")
    print(
        f"  baseline: save canonical x{args.n}:  {t_base_write:6.2f} s   ratio {t_variants / t_base_write:.2f}x (one process)"
    )
    print(
        f"{args.trajectories} oracle trajectories:     {t_traj:6.2f} s   ({t_traj / args.trajectories * 1000:.2f} ms each)"
    )
    print(
        f"  baseline: {args.trajectories} canonical episodes: {t_base_episodes:6.2f} s   ratio {t_traj / t_base_episodes:.2f}x"
    )
    print(
        f"  kept {summary.kept}, rejected {summary.rejected}, duplicates {summary.duplicates}, acceptance {summary.acceptance_rate:.1%}"
    )
    verdict = "within" if total <= GOAL_S else "OVER"
    print(f"total (variants + trajectories):    {total:6.2f} s   goal {GOAL_S:.0f} s: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
