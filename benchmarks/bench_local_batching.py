"""Throughput of the embedded model under concurrent evaluation: batched turns vs one at a time.

The same N livestream episodes are evaluated through the eval runner (the path `harnessctl eval
--model local:PATH` takes) with the project's tiny model, built by ``harnessctl model init``'s
builder into a temporary folder unless ``--model`` names a checkpoint (a trained one plays longer
episodes):

- **serial** — ``-j 1``: one turn at a time;
- **concurrent** — ``-j J`` (default 8): turns that wait together run as one batched ``generate``.

Greedy decoding, no call cache; every turn generates up to ``--max-tokens`` tokens over the
episode's ~800-token prompt. Rounds alternate the two modes so machine noise hits them alike;
the medians are reported, with the ratio measured in this run and the batch sizes the model saw.
Both modes must write the same completions (checked). Set ``OMP_NUM_THREADS`` to fix torch's
threads. Run: ``python benchmarks/bench_local_batching.py [--episodes 16] [--jobs 8] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harnessctl.eval.runner import EvalConfig, run_eval  # noqa: E402
from harnessctl.models.local import LocalModel  # noqa: E402


def tiny_model(folder: Path) -> Path:
    from harnessctl.harness import load_harness
    from harnessctl.models.tiny import build_tiny_model

    build_tiny_model(folder, load_harness(ROOT / "harnesses" / "livecommerce", validate=False))
    return folder


def evaluate(model: LocalModel, *, episodes: int, jobs: int, max_tokens: int, runs: Path, run_id: str) -> tuple:
    """Wall seconds, model turns and completion tokens of one run, and its completions by case."""
    config = EvalConfig(
        model=model.name,
        suites=["livestream"],
        limit=episodes,
        jobs=jobs,
        max_tokens=max_tokens,
        cache=False,
        runs_dir=str(runs),
        evals_dir=str(ROOT / "evals"),
        harness_path=str(ROOT / "harnesses" / "livecommerce"),
    )
    started = time.perf_counter()
    run_eval(config, backend=model, run_id=run_id)
    wall = time.perf_counter() - started
    turns = tokens = 0
    completions = {}
    for line in (runs / run_id / "records.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)["record"]
        turns += len(record["model_steps"])
        tokens += sum(step["completion_tokens"] for step in record["model_steps"])
        completions[record["case_id"]] = [t.get("completion_token_ids") for t in record.get("turn_token_ids") or []]
    return wall, turns, tokens, completions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=16, help="livestream cases per run")
    parser.add_argument("--jobs", type=int, default=8, help="cases in flight in the concurrent mode")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", help="a checkpoint folder (default: a fresh untrained tiny model)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.model.removeprefix("local:")) if args.model else tiny_model(Path(tmp) / "tiny")
        model = LocalModel(f"local:{path}")
        runs = Path(tmp) / "runs"
        walls: dict[str, list[float]] = {"serial": [], "concurrent": []}
        seen: dict[str, dict] = {}
        turns = tokens = 0
        evaluate(model, episodes=2, jobs=2, max_tokens=8, runs=runs, run_id="warm-up")
        sizes_before = dict(model.batch_stats.sizes)
        for r in range(args.rounds):
            for mode, jobs in (("serial", 1), ("concurrent", args.jobs)):
                wall, turns, tokens, completions = evaluate(
                    model, episodes=args.episodes, jobs=jobs, max_tokens=args.max_tokens, runs=runs, run_id=f"{mode}{r}"
                )
                walls[mode].append(wall)
                seen.setdefault(mode, completions)
        sizes = {k: v - sizes_before.get(k, 0) for k, v in sorted(model.batch_stats.sizes.items())}
        sizes = {k: v for k, v in sizes.items() if v}

    med = {mode: statistics.median(w) for mode, w in walls.items()}
    print(
        f"{args.episodes} livestream episodes ({turns} model turns, {tokens} completion tokens per run), "
        f"{path.name}, greedy, up to {args.max_tokens} tokens a turn, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, median of {args.rounds} rounds"
    )
    print(f"  {'mode':<22} {'s/run':>8} {'turns/s':>8} {'tokens/s':>9} {'x serial':>9}")
    for mode, label in (("serial", "serial (-j 1)"), ("concurrent", f"concurrent (-j {args.jobs})")):
        print(
            f"  {label:<22} {med[mode]:8.2f} {turns / med[mode]:8.2f} {tokens / med[mode]:9.1f} "
            f"{med['serial'] / med[mode]:9.2f}"
        )
    print(f"  batch sizes over all runs (size: batches): {sizes}")
    print(f"  same completions in both modes: {'yes' if seen['serial'] == seen['concurrent'] else 'NO'}")


if __name__ == "__main__":
    main()
