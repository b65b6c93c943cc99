"""The embedded model on this CPU: raw prefill and decode speed, then seconds per livestream case
with and without the prefix cache and batching, as ratios measured in one process.

The model is the pretrained base (``smollm2-135m``, fetched by ``harnessctl model fetch``) or any
``--model local:PATH`` (an adapter a stage trained plays realistic episodes: calls, short replies;
the zero-shot base writes prose up to ``--max-tokens``).

Part 1, the engine (random tokens, greedy, best of ``--rounds``):

- prefill of 1,000 tokens; 200 new tokens on top of an 800-token cached prefix;
- greedy decode, one sequence and eight batched (tokens/s, aggregate).

Part 2, livestream cases through the eval runner (the path ``harnessctl eval --model local:PATH``
takes), the same ``--cases`` each time, modes interleaved round by round:

- ``j1 plain``     — one turn at a time, nothing reused (the old path at ``-j 1``);
- ``j1 cache``     — one at a time, the prefix cache on (each turn reuses the harness and its
  episode's last turn);
- ``j8 plain``     — 8 cases in flight, turns one at a time, nothing reused;
- ``j8 batch``     — 8 in flight, turns batched (the shared prefix computed once per batch);
- ``j8 batch+cache`` — batched and cached (the default).

It prints seconds per case (wall ÷ cases) and each mode's ratio to ``j1 plain``, the reply
latency P50/P95 of each mode (a case is one viewer comment answered, tool calls included) against the 15 s budget, and checks that every mode wrote the
same completions (greedy). Record of the CPU and threads first. Run:
``python benchmarks/bench_local.py [--model local:PATH] [--cases 8] [--rounds 1] [--threads N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harnessctl.eval.runner import EvalConfig, run_eval  # noqa: E402
from harnessctl.models.bases import DEFAULT_BASE, resolve_base  # noqa: E402
from harnessctl.models.local import LocalModel  # noqa: E402

MODES = {
    "j1 plain": dict(jobs=1, max_batch=1, cache=False),
    "j1 cache": dict(jobs=1, max_batch=1, cache=True),
    "j8 plain": dict(jobs=8, max_batch=1, cache=False),
    "j8 batch": dict(jobs=8, max_batch=8, cache=False),
    "j8 batch+cache": dict(jobs=8, max_batch=8, cache=True),
}


def cpu() -> str:
    """The CPU's model name, the instructions that decide bf16 against fp32, and the core count."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    for line in text.splitlines():
        if line.startswith("model name"):
            extra = [f for f in ("avx512_bf16", "amx_bf16", "avx2") if f in text]
            return f"{line.split(':', 1)[1].strip()} ({', '.join(extra)}), {os.cpu_count()} cores"
    return platform.processor()


def engine(model: LocalModel, rounds: int) -> dict[str, float]:
    """Prefill, prefix reuse and decode speed on random tokens (best of ``rounds``)."""
    import torch
    from transformers import DynamicCache

    m, vocab = model.model, model.model.config.vocab_size
    torch.manual_seed(0)
    ids = torch.randint(10, vocab - 10, (1, 1000))
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds)

    with torch.inference_mode():
        for _ in range(rounds):
            t = time.perf_counter()
            m(input_ids=ids, logits_to_keep=1)
            keep("prefill_1000_s", time.perf_counter() - t)
            cache = DynamicCache(config=m.config)
            m(input_ids=ids[:, :800], cache=cache, use_cache=True, logits_to_keep=1)
            t = time.perf_counter()
            m(input_ids=ids[:, 800:], cache=cache, use_cache=True, logits_to_keep=1)
            keep("new_200_on_800_cached_s", time.perf_counter() - t)
            for batch in (1, 8):
                prompt = ids[:, :64].repeat(batch, 1)
                t = time.perf_counter()
                m.generate(
                    input_ids=prompt,
                    attention_mask=torch.ones_like(prompt),
                    max_new_tokens=64,
                    min_new_tokens=64,
                    do_sample=False,
                    pad_token_id=0,
                )
                keep(f"decode_{batch}_s", (time.perf_counter() - t) / (64 * batch))
    return {
        "prefill_tok_s": round(1000 / best["prefill_1000_s"], 1),
        "prefill_1000_s": round(best["prefill_1000_s"], 3),
        "new_200_on_800_cached_s": round(best["new_200_on_800_cached_s"], 3),
        "decode_1_tok_s": round(1 / best["decode_1_s"], 1),
        "decode_8_tok_s": round(1 / best["decode_8_s"], 1),
    }


def run_cases(backend: Any, *, jobs: int, n: int, max_tokens: int, runs: Path, run_id: str) -> dict[str, Any]:
    """``n`` livestream cases through the eval runner (the path ``harnessctl eval`` takes): wall
    seconds per case, the score, each case's replies and the reply latencies (a case is one viewer
    comment answered, tool calls included)."""
    config = EvalConfig(
        model=backend.name,
        suites=["livestream"],
        limit=n,
        jobs=jobs,
        max_tokens=max_tokens,
        cache=False,
        case_timeout_s=3600,
        runs_dir=str(runs),
        evals_dir=str(ROOT / "evals"),
        harness_path=str(ROOT / "harnesses" / "livecommerce"),
    )
    started = time.perf_counter()
    run_eval(config, backend=backend, run_id=run_id)
    wall = time.perf_counter() - started
    records = [json.loads(line) for line in (runs / run_id / "records.jsonl").read_text().splitlines()]
    replies = {
        r["case_id"]: [m.get("content") for m in r["record"]["messages"] if m["role"] == "assistant"] for r in records
    }
    latencies = sorted(r["latency_s"] for r in records)
    scores = [r["score"] for r in records if r.get("score") is not None]
    return {
        "wall_s": wall,
        "s_per_case": wall / n,
        "score": statistics.mean(scores) * 100 if scores else float("nan"),
        "replies": replies,
        "latency": latencies,
        "p50": pct(latencies, 0.5),
        "p95": pct(latencies, 0.95),
    }


def cases(spec: str, mode: dict, n: int, max_tokens: int, runs: Path, run_id: str) -> dict:
    model = LocalModel(spec, max_batch=mode["max_batch"], prefix_cache_mb=None if mode["cache"] else 0)
    result = run_cases(model, jobs=mode["jobs"], n=n, max_tokens=max_tokens, runs=runs, run_id=run_id)
    result.update(
        cached_tokens=model.cached_prefix_tokens,
        shared_tokens=model.shared_prefix_tokens,
        batches=dict(model.batch_stats.sizes),
    )
    return result


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="", help="local:PATH (default: the fetched smollm2-135m base)")
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of the modes")
    ap.add_argument("--skip-engine", action="store_true")
    args = ap.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    spec = args.model or f"local:{resolve_base(DEFAULT_BASE)}"
    print(f"cpu: {cpu()} · torch threads {torch.get_num_threads()} · load {os.getloadavg()[0]:.1f} · model {spec}")
    if not args.skip_engine:
        print("engine:", json.dumps(engine(LocalModel(spec, max_batch=1), max(1, args.rounds))))
    chosen = [m.strip() for m in args.modes.split(",") if m.strip()]
    results: dict[str, list[dict]] = {m: [] for m in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in chosen:
                run_id = f"{name.replace(' ', '-').replace('+', '-')}-{r}"
                results[name].append(cases(spec, MODES[name], args.cases, args.max_tokens, Path(tmp), run_id))
                last = results[name][-1]
                print(f"  round {r + 1} {name:15s} {last['s_per_case']:7.2f} s/case  (load {os.getloadavg()[0]:.1f})")
    base_name = chosen[0]
    base = statistics.median(x["s_per_case"] for x in results[base_name])
    print(f"\n{args.cases} livestream cases, max_tokens {args.max_tokens}, median of {args.rounds} round(s):")
    print(
        f"{'mode':16s} {'s/case':>8s} {'ratio':>7s} {'score':>6s} {'P50':>7s} {'P95':>7s}  cached/shared tokens, batches"
    )
    reference = results[base_name][0]["replies"]
    for name in chosen:
        runs = results[name]
        med = statistics.median(x["s_per_case"] for x in runs)
        lat = sorted(t for x in runs for t in x["latency"])
        same = all(x["replies"] == reference for x in runs)
        print(
            f"{name:16s} {med:8.2f} {base / med:6.2f}x {runs[0]['score']:6.1f} {pct(lat, 0.5):6.2f}s {pct(lat, 0.95):6.2f}s"
            f"  {runs[-1]['cached_tokens']}/{runs[-1]['shared_tokens']}, {runs[-1]['batches']}"
            + ("" if same else "  (replies differ from the first mode)")
        )


if __name__ == "__main__":
    main()
