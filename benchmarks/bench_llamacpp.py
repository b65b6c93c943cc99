"""transformers (:class:`LocalModel`) against llama.cpp (:class:`LlamaCppModel`) on one adapter, in
one process, as ratios.

Part 1, the engine (random tokens, greedy, best of ``--rounds``): prefill of 1,000 tokens; 200 new
tokens on an 800-token cached prefix; decode of one sequence (64 tokens after a 64-token prompt).

Part 2, livestream cases through the eval runner at ``-j 1`` (the served avatar's concurrency), the
same ``--cases`` for each engine: seconds per case and reply latency P50/P95 (a case is one viewer
comment answered, tool calls included) against the 15 s budget, plus the score.

Part 3, greedy agreement: every turn transformers answered in part 2 (its exact messages and
tools) is replayed through llama.cpp in each ``--types`` export; a turn agrees when its completion
tokens are identical.

Run: ``python benchmarks/bench_llamacpp.py [--model out/sft] [--cases 8] [--types f16,q8_0] [--threads N]``.
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
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the shared pieces of the transformers benchmark (this folder is on the path when run as a script)
from bench_local import cpu, engine, run_cases  # noqa: E402

from harnessctl.models.bases import DEFAULT_BASE, resolve_base  # noqa: E402
from harnessctl.models.llamacpp import LlamaCppModel, llama_threads  # noqa: E402
from harnessctl.models.local import LocalModel, set_threads  # noqa: E402


def engine_llamacpp(model: LlamaCppModel, rounds: int) -> dict[str, float]:
    import random

    llm = model.llm
    rng = random.Random(0)
    ids = [rng.randrange(10, llm.n_vocab() - 10) for _ in range(1000)]
    best: dict[str, float] = {}
    for _ in range(rounds):
        llm.reset()
        t = time.perf_counter()
        llm.eval(ids)
        _keep(best, "prefill", time.perf_counter() - t)
        llm.reset()
        llm.eval(ids[:800])
        t = time.perf_counter()
        llm.eval(ids[800:])
        _keep(best, "new200", time.perf_counter() - t)
        llm.reset()
        t = time.perf_counter()
        for n, _token in enumerate(llm.generate(ids[:64], temp=0.0, top_k=0, min_p=0.0), start=1):
            if n >= 64:
                break
        _keep(best, "decode", (time.perf_counter() - t) / 64)
    llm.reset()
    model._last = []  # the KV cache no longer holds the last request
    return _engine_summary(best)


def _keep(best: dict[str, float], name: str, seconds: float) -> None:
    best[name] = min(best.get(name, float("inf")), seconds)


def _engine_summary(best: dict[str, float]) -> dict[str, float]:
    return {
        "prefill_1000_s": round(best["prefill"], 3),
        "prefill_tok_s": round(1000 / best["prefill"], 1),
        "new_200_on_800_cached_s": round(best["new200"], 3),
        "decode_1_tok_s": round(1 / best["decode"], 1),
    }


class Recording:
    """A backend wrapper that keeps every turn's (messages, tools, settings, completion ids)."""

    def __init__(self, inner: Any):
        self.inner, self.name, self.turns = inner, inner.name, []

    def for_episode(self, case: Any, harness: Any) -> Recording:
        return self

    def generate(self, messages: Any, tools: Any, settings: Any) -> Any:
        response = self.inner.generate(messages, tools, settings)
        self.turns.append((messages, tools, settings, response.completion_token_ids))
        return response


def agreement(model: LlamaCppModel, turns: list[tuple]) -> dict[str, Any]:
    """Replayed turns whose completion tokens equal transformers', and the mean shared fraction."""
    same, shares = 0, []
    for messages, tools, settings, reference in turns:
        got = model.generate(messages, tools, settings).completion_token_ids
        same += got == reference
        n = 0
        while n < min(len(got), len(reference)) and got[n] == reference[n]:
            n += 1
        shares.append(n / max(1, len(reference)))
    return {"turns": len(turns), "identical": same, "mean_shared_prefix": round(statistics.mean(shares), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="", help="an adapter or model folder (default: the fetched smollm2-135m base)")
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2, help="engine rounds (best of)")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=0, help="torch's threads (default: $HARNESSCTL_THREADS or cores)")
    ap.add_argument(
        "--llama-threads", type=int, default=0, help="llama.cpp's (default: $HARNESSCTL_THREADS or cores - 1)"
    )
    ap.add_argument("--types", default="f16,q8_0", help="llama.cpp export types to measure; the first runs the cases")
    ap.add_argument("--skip-engine", action="store_true")
    args = ap.parse_args()
    folder = args.model.removeprefix("local:") or str(resolve_base(DEFAULT_BASE))
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    threads = set_threads(args.threads or None)
    llama = llama_threads(args.llama_threads or None)
    load = os.getloadavg()
    print(
        f"cpu: {cpu()} · torch threads {threads}, llama.cpp threads {llama} · load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} · model {folder}"
    )
    local = LocalModel(f"local:{folder}", max_batch=1)
    llamas = {t: LlamaCppModel(f"llamacpp:{folder}", qtype=t, threads=llama) for t in types}
    if not args.skip_engine:
        rows = {"transformers": engine(local, args.rounds)}
        rows.update({f"llama.cpp {t}": engine_llamacpp(m, args.rounds) for t, m in llamas.items()})
        print(f"\nengine (best of {args.rounds}):")
        print(f"{'engine':18s} {'prefill 1000':>13s} {'prefill tok/s':>14s} {'200 on 800':>11s} {'decode tok/s':>13s}")
        for name, r in rows.items():
            print(
                f"{name:18s} {r['prefill_1000_s']:12.2f}s {r['prefill_tok_s']:14.1f} "
                f"{r['new_200_on_800_cached_s']:10.2f}s {r['decode_1_tok_s']:13.1f}"
            )
        ref = rows["transformers"]
        for name, r in list(rows.items())[1:]:
            print(
                f"  {name} / transformers: prefill {r['prefill_tok_s'] / ref['prefill_tok_s']:.2f}x, "
                f"decode {r['decode_1_tok_s'] / ref['decode_1_tok_s']:.2f}x"
            )
    recorded = Recording(local)
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"n": args.cases, "max_tokens": args.max_tokens, "runs": Path(tmp), "jobs": 1}
        runs = {"transformers": run_cases(recorded, **cases, run_id="transformers")}
        print(f"  transformers done (load {os.getloadavg()[0]:.2f})")
        first = llamas[types[0]]
        runs[f"llama.cpp {types[0]}"] = run_cases(first, **cases, run_id="llamacpp")
        print(f"  llama.cpp done (load {os.getloadavg()[0]:.2f})")
    print(f"\n{args.cases} livestream cases at -j 1, max_tokens {args.max_tokens}:")
    print(f"{'engine':18s} {'s/case':>8s} {'ratio':>7s} {'P50':>7s} {'P95':>7s} {'score':>6s}  replies")
    base = runs["transformers"]
    for name, r in runs.items():
        same = "same" if r["replies"] == base["replies"] else "differ"
        print(
            f"{name:18s} {r['s_per_case']:8.2f} {base['s_per_case'] / r['s_per_case']:6.2f}x "
            f"{r['p50']:6.2f}s {r['p95']:6.2f}s {r['score']:6.1f}  {same}"
        )
    print(f"  prefix reuse (llama.cpp): {first.cached_prefix_tokens} reused / {first.computed_prompt_tokens} computed")
    print("\ngreedy agreement with transformers, turn by turn (its prompts replayed):")
    for t, m in llamas.items():
        print(f"  {t}: {json.dumps(agreement(m, recorded.turns))}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
