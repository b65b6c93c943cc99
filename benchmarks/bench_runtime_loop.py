"""The agent loop in process: what it costs on top of the policy, and what validator caching buys.

Data generation and RL rollouts run the loop thousands of times under freshly rendered
variants, with no network in between, so the loop's own cost is what bounds them. Measured in
one run, rounds alternating so machine noise hits every path alike (medians reported):

- **policy only** — the oracle's ``generate`` calls and the world's tool calls of an episode,
  replayed without the loop (the floor);
- **loop** — the same episodes through :func:`run_episode` (messages, parsing, validation,
  hooks, guards, the record);
- **loop + score** — plus :func:`score_episode`.

And argument validation under a new variant each call (a fresh ``parameters`` dict every time):
compiled validators cached by content versus compiling one per call.

Run: ``python benchmarks/bench_runtime_loop.py [--cases 200] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jsonschema import validators  # noqa: E402

from harnessctl.harness import load_harness, render_harness  # noqa: E402
from harnessctl.models.base import GenerationSettings  # noqa: E402
from harnessctl.runtime import run_episode  # noqa: E402
from harnessctl.runtime.validation import check_arguments  # noqa: E402
from harnessctl.sim import OracleModel, World, generate_cases, score_episode  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    harness = load_harness(ROOT / "harnesses" / "livecommerce")
    rendered = render_harness(harness)
    cases = generate_cases(args.cases, seed=1, faults=0.3)
    oracle = OracleModel()
    settings = GenerationSettings()

    # The exact conversations of each episode, to replay the policy and the tools without the loop.
    transcripts = []
    for case in cases:
        rec = run_episode(harness, case, oracle, rendered=rendered)
        prefixes, calls = [], []
        for i, m in enumerate(rec.messages):
            if m["role"] == "assistant":
                prefixes.append(rec.messages[:i])
        for s in rec.tool_steps:
            if s.backend:
                calls.append((s.backend, s.arguments, s.key))
        transcripts.append((case, prefixes, calls))

    def policy_only() -> None:
        for case, prefixes, calls in transcripts:
            policy = oracle.for_episode(case, harness)
            for messages in prefixes:
                policy.generate(messages, rendered.tools, settings)
            world = World(case=case)
            for backend, arguments, key in calls:
                try:
                    world.call(backend, arguments, tool_key=key)
                except Exception:  # noqa: BLE001 - the injected faults, as in the loop
                    pass

    def loop() -> None:
        for case in cases:
            run_episode(harness, case, oracle, rendered=rendered)

    def loop_and_score() -> None:
        for case in cases:
            score_episode(run_episode(harness, case, oracle, rendered=rendered), case)

    paths = {"policy only": policy_only, "loop": loop, "loop + score": loop_and_score}
    for fn in paths.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(args.rounds):
        for label, fn in paths.items():
            t = time.perf_counter()
            fn()
            times[label].append((time.perf_counter() - t) / len(cases))
    med = {k: statistics.median(v) for k, v in times.items()}
    turns = sum(len(p) for _, p, _ in transcripts) / len(transcripts)
    base = med["policy only"]
    print(
        f"agent loop in process ({len(cases)} oracle episodes, {turns:.2f} model turns each, {args.rounds} rounds, medians)"
    )
    print(f"  {'path':<13} {'ms/episode':>11} {'ms/turn':>9} {'x policy':>9}")
    for label, v in med.items():
        print(f"  {label:<13} {v * 1000:11.3f} {v * 1000 / turns:9.3f} {v / base:9.2f}")
    print(f"  the loop's own work: {(med['loop'] - base) * 1000 / turns:.3f} ms/turn")

    schema = harness.tool("order_status").parameters
    arguments = {"order_id": "LM123456"}
    n = 2000
    fresh = [copy.deepcopy(schema) for _ in range(n)]
    t = time.perf_counter()
    for s in fresh:
        check_arguments(s, arguments)
    cached = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for s in fresh:
        cls = validators.validator_for(s)
        cls.check_schema(s)
        next(iter(cls(s).iter_errors(arguments)), None)
    compiled = (time.perf_counter() - t) / n
    print(f"argument validation, a new variant's schema each call ({n} calls)")
    print(f"  cached by content: {cached * 1e6:8.1f} us/call")
    print(f"  compiled per call: {compiled * 1e6:8.1f} us/call  ({compiled / cached:.1f}x the cached cost)")


if __name__ == "__main__":
    main()
