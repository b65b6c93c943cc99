"""Benchmark of the eval runner and the IFEval checkers.

1. Eval throughput at ``-j 16`` against a local stub model with a fixed 200 ms latency per call,
   served on loopback and reached through litellm (the production path). The ideal is every
   call overlapped perfectly: ``calls * 0.2 s / 16``. Reported: the share of that ideal reached
   (goal: at least 0.90), cases per second, and the run's own P50/P95 reply latency. Two
   baselines run in the same process, so the gap can be split: the same calls through litellm
   alone (no runner around them), and the runner alone (the same cases with an in-process model
   that awaits the same latency and costs no CPU: no HTTP, no litellm). The runner alone shows
   what the runner's own scoring, records and set-up cost; litellm alone what the client does.
2. IFEval checks per second: the checker package's strict + loose verdicts over the generated
   IFEval suite, one fixed response per prompt.

    python benchmarks/bench_eval.py [--cases 320] [--jobs 16] [--latency 0.2] [--suite livestream]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessctl.eval import ifeval  # noqa: E402
from harnessctl.eval.runner import EvalConfig, run_eval  # noqa: E402
from harnessctl.eval.suites import suite_path  # noqa: E402
from harnessctl.models.types import ModelResponse  # noqa: E402


def serve_stub(latency_s: float) -> None:
    """The project's embedded OpenAI-compatible server, serving a scripted model that answers
    every request after ``latency_s`` with a plain reply; prints its base URL, then serves
    until killed."""
    from harnessctl.models.scripted import ScriptedModel
    from harnessctl.models.server import EmbeddedServer

    def answer(messages, tools):
        time.sleep(latency_s)
        return "Thanks for asking! Let me check that for you."

    server = EmbeddedServer(ScriptedModel([answer], name="stub", repeat_last=True), model_name="stub")
    print(server.url, flush=True)  # noqa: T201
    server.serve_forever()


def start_stub_process(latency_s: float) -> tuple[str, subprocess.Popen]:
    """The stub in its own process, as a real server would be."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-stub", str(latency_s)], stdout=subprocess.PIPE, text=True
    )
    return proc.stdout.readline().strip(), proc


def bench_litellm_alone(url: str, calls: int, jobs: int, latency_s: float) -> dict:
    """The baseline: the same number of calls through the served backend (litellm) alone, with
    no runtime, scoring or records around them."""

    from harnessctl.models.base import GenerationSettings
    from harnessctl.models.litellm_backend import LiteLLMModel

    model = LiteLLMModel("openai/stub", api_base=url)

    async def run(n: int) -> float:
        sem = asyncio.Semaphore(jobs)

        async def one(i: int) -> None:
            async with sem:
                await model.agenerate([{"role": "user", "content": f"question {i}"}], [], GenerationSettings())

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - t0

    asyncio.run(run(jobs))  # warm-up
    wall = asyncio.run(run(calls))
    return {"calls": calls, "wall_s": round(wall, 3), "share_of_ideal": _share_of_ideal(calls, latency_s, jobs, wall)}


def _eval_config(suite: str, limit: int, jobs: int, runs_dir: str, **model: str) -> EvalConfig:
    """The benchmark's eval run of ``limit`` cases; ``model``: ``model=`` and, served, ``api_base=``."""
    return EvalConfig(
        suites=[suite],
        jobs=jobs,
        limit=limit,
        cache=False,
        evals_dir=str(REPO / "evals"),
        runs_dir=runs_dir,
        harness_path=str(REPO / "harnesses" / "livecommerce"),
        **model,
    )


def _model_calls(outcome) -> int:
    """Every model call of every episode, as the records show them."""
    return sum(len((r.record or {}).get("model_steps") or []) for r in outcome.store.results())


def _share_of_ideal(calls: int, latency_s: float, jobs: int, wall_s: float) -> float:
    """The share of the ideal (every call overlapped perfectly: ``calls * latency / jobs``) reached."""
    return round(calls * latency_s / jobs / wall_s, 3)


class _SleepingModel:
    """An in-process model that answers every call after ``latency_s`` without using the CPU:
    the runner's ceiling, with no HTTP and no litellm."""

    name = "sleeping-stub"

    def __init__(self, latency_s: float):
        self.latency_s = latency_s

    def for_episode(self, case, harness):
        return self

    def generate(self, messages, tools, settings):
        raise RuntimeError("the runner-alone baseline runs on the async path only")

    async def agenerate(self, messages, tools, settings):
        await asyncio.sleep(self.latency_s)
        return ModelResponse(
            content="Thanks for asking! Let me check that for you.",
            tool_calls=[],
            finish_reason="stop",
            prompt_tokens=10,
            completion_tokens=10,
        )


def bench_runner_alone(suite: str, cases: int, jobs: int, latency_s: float, tmp: str) -> dict:
    """The second baseline: the same cases through the runner with :class:`_SleepingModel`."""
    model = _SleepingModel(latency_s)
    run_eval(_eval_config(suite, jobs, jobs, tmp, model=model.name), backend=model)  # warm-up
    t0 = time.perf_counter()
    outcome = run_eval(_eval_config(suite, cases, jobs, tmp, model=model.name), backend=model)
    wall = time.perf_counter() - t0
    calls = _model_calls(outcome)
    return {"calls": calls, "wall_s": round(wall, 3), "share_of_ideal": _share_of_ideal(calls, latency_s, jobs, wall)}


def bench_throughput(suite: str, cases: int, jobs: int, latency_s: float) -> dict:
    url, server = start_stub_process(latency_s)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # Warm-up: import litellm and open its HTTP client before the clock starts.
            served = {"model": "openai/stub", "api_base": url}
            run_eval(_eval_config(suite, jobs, jobs, tmp, **served))
            t0 = time.perf_counter()
            outcome = run_eval(_eval_config(suite, cases, jobs, tmp, **served))
            wall = time.perf_counter() - t0
            calls = _model_calls(outcome)
            runner_alone = bench_runner_alone(suite, cases, jobs, latency_s, tmp)
        baseline = bench_litellm_alone(url, calls, jobs, latency_s)
    finally:
        server.terminate()
        server.wait()
    ideal = calls * latency_s / jobs
    lat = outcome.summary["suites"][suite]["latency"]
    return {
        "suite": suite,
        "cases": cases,
        "jobs": jobs,
        "stub_latency_s": latency_s,
        "model_calls": calls,
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "share_of_ideal": round(ideal / wall, 3),
        "cases_per_s": round(cases / wall, 2),
        "p50_s": round(lat["p50"], 3),
        "p95_s": round(lat["p95"], 3),
        "litellm_alone": baseline,
        "runner_vs_litellm_alone": round(baseline["wall_s"] / wall, 3),
        "runner_alone": runner_alone,
    }


def bench_ifeval(n: int = 1000) -> dict:
    cases = ifeval.build_cases(n, seed=54_001)
    response = (
        "<<Tonight on Lumi Live>>\nOur bamboo board is light and sturdy.\n\n* easy to clean\n* lasts for years\n"
        "* ships tomorrow\n\nP.S. Ask me anything about it."
    )
    ifeval.score_response(cases[0], response)  # checker import and NLTK set-up, outside the clock
    t0 = time.perf_counter()
    scores = [ifeval.score_response(c, response) for c in cases]
    wall = time.perf_counter() - t0
    n_instructions = sum(len(s.instructions) for s in scores)
    return {
        "prompts": n,
        "instructions": n_instructions,
        "wall_s": round(wall, 3),
        "prompts_per_s": round(n / wall, 1),
        "instruction_checks_per_s": round(n_instructions / wall, 1),
    }


def _cpu_model() -> str:
    """The CPU this ran on (timings differ between machines)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    except OSError:
        pass
    return f"unknown x{os.cpu_count()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=320)
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--suite", default=None, help="suite to run (default: livestream when built, else ifeval)")
    parser.add_argument("--serve-stub", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stub is not None:
        serve_stub(args.serve_stub)
        return
    suite = args.suite or ("livestream" if suite_path("livestream", REPO / "evals").is_file() else "ifeval")
    result = {"throughput": bench_throughput(suite, args.cases, args.jobs, args.latency), "ifeval": bench_ifeval()}
    t, i = result["throughput"], result["ifeval"]
    result["cpu"] = _cpu_model()
    print(json.dumps(result, indent=2))  # noqa: T201 - a benchmark script
    print(  # noqa: T201
        f"\neval throughput at -j {t['jobs']} against a {1000 * t['stub_latency_s']:.0f} ms stub ({t['suite']}, {t['cases']} cases): "
        f"{t['share_of_ideal']:.2f} of ideal (goal >= 0.90), {t['cases_per_s']} cases/s; "
        f"the same calls through litellm alone: {t['litellm_alone']['share_of_ideal']:.2f} of ideal; "
        f"the runner alone (in-process model, no HTTP): {t['runner_alone']['share_of_ideal']:.2f} of ideal\n"
        f"IFEval: {i['instruction_checks_per_s']} instruction checks/s ({i['prompts_per_s']} prompts/s, strict + loose)"
    )


if __name__ == "__main__":
    main()
