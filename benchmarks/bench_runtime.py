"""What the agent runtime itself costs per turn, as a ratio to raw HTTP calls to the same server.

An instant stub model is served on loopback by the embedded OpenAI-compatible server: it answers
the viewer's message with a fixed tool call and the tool result with a fixed reply, so one turn
is two chat completions and nothing waits on a model. In the same process and run we time:

- **raw HTTP** — the same two POSTs (same bodies) with one keep-alive ``httpx.Client``: the floor;
- **litellm** — the two calls through :class:`LiteLLMModel` (litellm + the OpenAI client + parsing);
- **runtime** — a whole :func:`run_episode` through that backend: rendering, the two calls, tool
  execution in the simulator, argument validation, guards, the record.

Rounds alternate the three so machine noise hits them alike; the medians of the rounds are
reported. Run: ``python benchmarks/bench_runtime.py [--turns 200] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harnessctl.models.base import GenerationSettings  # noqa: E402
from harnessctl.models.litellm_backend import LiteLLMModel  # noqa: E402
from harnessctl.models.server import serve_in_background  # noqa: E402
from harnessctl.models.types import ModelResponse, ToolCall  # noqa: E402

SETTINGS = GenerationSettings(max_tokens=64, timeout_s=30)


class InstantStub:
    """A fixed tool call for a viewer's message, a fixed reply once a tool result is in."""

    name = "stub"

    def __init__(self, tool_name: str, arguments: dict, reply: str):
        self.call = ToolCall(name=tool_name, arguments=arguments)
        self.reply = reply

    def for_episode(self, case, harness):
        return self

    def generate(self, messages, tools, settings):
        if messages and messages[-1].get("role") == "tool":
            return ModelResponse(content=self.reply, prompt_tokens=1, completion_tokens=1)
        return ModelResponse(tool_calls=[self.call], prompt_tokens=1, completion_tokens=1)


def _case_and_harness():
    from harnessctl.harness import load_harness
    from harnessctl.sim import case_from_query, load_catalog

    harness = load_harness(ROOT / "harnesses" / "livecommerce")
    catalog = load_catalog()
    product = catalog.products[0]["id"]
    case = case_from_query("how much is the one on screen?", product, catalog)
    return harness, case, product


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per round and per path")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import httpx

    from harnessctl.harness import render_harness
    from harnessctl.runtime import run_episode

    harness, case, product = _case_and_harness()
    tool = harness.tool("product_details")
    stub = InstantStub(tool.name, {"product_id": product}, "It is $19.90 live right now!")
    url, stop = serve_in_background(stub, model_name="stub")
    model = LiteLLMModel("openai/stub", api_base=url, max_retries=0)

    # The raw path sends what the runtime sends: the rendered prompt, then the tool result.
    rendered = render_harness(harness)
    first = [{"role": "system", "content": rendered.system_prompt}, {"role": "user", "content": case.query}]
    call_msg = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": tool.name, "arguments": json.dumps({"product_id": product})},
            }
        ],
    }
    second = first + [call_msg, {"role": "tool", "tool_call_id": "call_0", "content": '{"price": 19.9}'}]
    bodies = [
        {"model": "stub", "messages": first, "tools": rendered.tools, "temperature": 0.0, "max_tokens": 64},
        {"model": "stub", "messages": second, "tools": rendered.tools, "temperature": 0.0, "max_tokens": 64},
    ]
    http = httpx.Client(base_url=url, headers={"Authorization": "Bearer sk-local"}, timeout=30)

    def raw_turn() -> None:
        for body in bodies:
            r = http.post("/chat/completions", json=body)
            r.raise_for_status()
            r.json()["choices"][0]["message"]

    def litellm_turn() -> None:
        model.generate(first, rendered.tools, SETTINGS)
        model.generate(second, rendered.tools, SETTINGS)

    def runtime_turn() -> None:
        record = run_episode(harness, case, model, settings=SETTINGS)
        if record.termination.value != "reply" or len(record.model_steps) != 2:
            raise SystemExit(
                f"the runtime did not run the expected turn: {record.termination}, {len(record.model_steps)} model calls"
            )

    paths = {"raw HTTP": raw_turn, "litellm": litellm_turn, "runtime": runtime_turn}
    for fn in paths.values():  # warm-up: imports, connections, caches
        for _ in range(10):
            fn()
    per_turn: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(args.rounds):
        for label, fn in paths.items():
            t = time.perf_counter()
            for _ in range(args.turns):
                fn()
            per_turn[label].append((time.perf_counter() - t) / args.turns)
    stop()
    http.close()

    med = {k: statistics.median(v) for k, v in per_turn.items()}
    base = med["raw HTTP"]
    print(
        f"runtime cost per turn (2 chat completions against an instant stub, {args.rounds} rounds x {args.turns} turns, medians)"
    )
    print(f"  {'path':<10} {'ms/turn':>9} {'x raw HTTP':>11}")
    for label, value in med.items():
        print(f"  {label:<10} {value * 1000:9.3f} {value / base:11.2f}")
    print(f"  runtime's own work beyond its two litellm calls: {(med['runtime'] - med['litellm']) * 1000:.3f} ms/turn")


if __name__ == "__main__":
    main()
