"""Latency bench against any served endpoint: per-reply P50/P95/P99 at several concurrencies,
time to first token and decode tokens/s where the server streams, and the share over budget.

Requests are real first turns of the agent: the harness's system prompt and tool list and a
viewer message from the livestream suite, sent through litellm with ``stream=True`` (time to
first token = first chunk that carries text or a tool call; tokens/s = completion tokens over
the time after it, from the usage the server reports). The embedded server streams (token by
token for an in-process checkpoint); a server that refuses streaming is measured without it:
whole-reply latency only, tokens/s over the whole reply.

:func:`vllm_serve_command` builds the ``vllm serve`` line for a checkpoint with the tool-call
parser, with or without speculative decoding (``mtp`` for checkpoints with multi-token-prediction
layers, ``ngram`` for any model); ``scripts/vllm_latency.sh`` serves both and runs this bench.

>>> r = bench_latency("openai/tiny", api_base="http://127.0.0.1:8000/v1", concurrency=[1, 4])   # doctest: +SKIP
>>> [(lv.concurrency, round(lv.p95, 2)) for lv in r.levels]                                      # doctest: +SKIP
[(1, 0.41), (4, 1.38)]
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from harnessctl.eval.charts import bar_chart
from harnessctl.eval.report import REPORT_CSS
from harnessctl.eval.stats import percentile
from harnessctl.eval.suites import load_suite, sample
from harnessctl.harness import load_harness, render_harness
from harnessctl.models.litellm_backend import DUMMY_API_KEY, check_reachable, import_litellm, request_timeout
from harnessctl.models.server import vllm_command
from harnessctl.runtime.messages import history_messages, viewer_message

SPECULATIVE_METHODS = ("mtp", "ngram")


@dataclass
class Sample:
    """One request: whole-reply latency, time to first token (None without streaming), tokens."""

    latency_s: float
    ttft_s: float | None = None
    completion_tokens: int | None = None
    error: str | None = None


@dataclass
class Level:
    """The numbers at one concurrency."""

    concurrency: int
    n: int
    errors: int
    p50: float
    p95: float
    p99: float
    ttft_p50: float | None
    ttft_p95: float | None
    tokens_per_s: float | None  # mean per reply, decode phase when streamed
    over_budget: float  # share of replies over the budget
    throughput_rps: float
    streamed: bool
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class LatencyBench:
    model: str
    api_base: str | None
    budget_s: float
    max_tokens: int
    levels: list[Level] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "api_base": self.api_base,
            "budget_s": self.budget_s,
            "max_tokens": self.max_tokens,
            "note": self.note,
            "levels": [lv.to_dict() for lv in self.levels],
        }

    def over_budget_at(self) -> list[int]:
        """The concurrencies whose P95 is over the budget (or unknown: every request failed).

        >>> bench = LatencyBench("openai/tiny", None, budget_s=1.0, max_tokens=8)
        >>> bench.levels = [Level(c, 8, 0, 0.2, p95, 0.9, None, None, None, 0.0, 1.0, False, 1.0) for c, p95 in ((1, 0.5), (4, 1.5))]
        >>> bench.over_budget_at()
        [4]
        """
        return [lv.concurrency for lv in self.levels if not lv.p95 <= self.budget_s]


def bench_requests(
    harness_dir: str | Path, evals_dir: str | Path = "evals", n: int = 32
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """``n`` first-turn requests (messages, tools): the harness rendered, viewer messages from
    the livestream suite (evenly spread, so every intent is in).

    >>> len(bench_requests("harnesses/livecommerce", n=8))   # doctest: +SKIP
    """
    h = load_harness(harness_dir)
    rendered = render_harness(h)
    items = [i for i in load_suite("livestream", evals_dir) if i.harness is None]
    out = []
    for item in sample(items, n):
        messages = [
            {"role": "system", "content": rendered.system_prompt},
            *history_messages(item.case),
            viewer_message(item.case),
        ]
        out.append((messages, rendered.tools))
    return out


async def _one(litellm: Any, kwargs: dict[str, Any], stream: bool) -> Sample:
    started = time.perf_counter()
    if not stream:
        raw = await litellm.acompletion(**kwargs)
        latency = time.perf_counter() - started
        usage = getattr(raw, "usage", None)
        return Sample(latency, None, getattr(usage, "completion_tokens", None))
    first: float | None = None
    tokens: int | None = None
    response = await litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
    async for chunk in response:
        choices = getattr(chunk, "choices", None) or []
        if first is None and choices:
            delta = getattr(choices[0], "delta", None)
            if delta is not None and (getattr(delta, "content", None) or getattr(delta, "tool_calls", None)):
                first = time.perf_counter() - started
        usage = getattr(chunk, "usage", None)
        if usage is not None and getattr(usage, "completion_tokens", None):
            tokens = int(usage.completion_tokens)
    return Sample(time.perf_counter() - started, first, tokens)


def _streaming_refused(e: Exception) -> bool:
    text = str(e).lower()
    return "stream" in text and ("not supported" in text or "400" in text or "invalid" in text)


async def abench_latency(
    model: str,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    concurrency: list[int] | tuple[int, ...] = (1, 4, 16),
    requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]],
    per_level: int | None = None,
    budget_s: float = 15.0,
    max_tokens: int = 128,
    temperature: float = 0.0,
    seed: int | None = None,
    timeout_s: float = 120.0,
    stream: bool = True,
    progress: Any | None = None,
) -> LatencyBench:
    """Async :func:`bench_latency`.

    >>> await abench_latency("openai/tiny", api_base=url, requests=reqs, concurrency=[1, 4])   # doctest: +SKIP
    """
    if not requests:
        raise ValueError("no requests to send")
    if any(c < 1 for c in concurrency):
        raise ValueError(f"--concurrency values must be at least 1, got {list(concurrency)}")
    if api_base:  # a dead endpoint is one message, not a table of failed requests
        check_reachable(model, api_base)
    litellm = import_litellm()
    result = LatencyBench(model=model, api_base=api_base, budget_s=budget_s, max_tokens=max_tokens)
    base = {
        "model": model,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "timeout": request_timeout(timeout_s),
        "max_retries": 0,
        "num_retries": 0,
    }
    if seed is not None:
        base["seed"] = seed
    if api_base:
        base["api_base"] = api_base
        base["api_key"] = api_key or DUMMY_API_KEY
    elif api_key:
        base["api_key"] = api_key
    streamed = stream
    for c in concurrency:
        n = per_level or max(2 * c, 8)
        sem = asyncio.Semaphore(c)
        samples: list[Sample] = []

        async def send(
            i: int, c: int = c, sem: asyncio.Semaphore = sem, samples: list[Sample] = samples, n: int = n
        ) -> None:
            nonlocal streamed
            messages, tools = requests[i % len(requests)]
            kwargs = {**base, "messages": messages, "tools": tools}
            async with sem:
                started = time.perf_counter()
                try:
                    asked = streamed
                    try:
                        s = await _one(litellm, kwargs, asked)
                    except Exception as e:  # a server without streaming answers 400: ask again without
                        if not (asked and _streaming_refused(e)):
                            raise
                        streamed = False
                        s = await _one(litellm, kwargs, False)
                except Exception as e:  # noqa: BLE001 - a failed request is a counted error, not a crash
                    s = Sample(time.perf_counter() - started, error=f"{type(e).__name__}: {str(e)[:200]}")
            samples.append(s)
            if progress:
                progress(f"c={c}", len(samples), n)

        t0 = time.perf_counter()
        await asyncio.gather(*(send(i) for i in range(n)))
        wall = time.perf_counter() - t0
        result.levels.append(_level(c, samples, budget_s, wall, streamed))
    if not streamed:
        result.note = (
            "the server does not stream: time to first token is not measured and tokens/s is over the whole reply"
        )
    return result


def bench_latency(model: str, **kwargs: Any) -> LatencyBench:
    """Send the requests at each concurrency (``per_level`` each, default max(2c, 8)) and measure.

    >>> bench_latency("openai/tiny", api_base=url, requests=bench_requests("harnesses/livecommerce"), concurrency=[1])   # doctest: +SKIP
    """
    return asyncio.run(abench_latency(model, **kwargs))


def bench_harness(
    model: str,
    harness_dir: str | Path,
    evals_dir: str | Path = "evals",
    *,
    html: str | Path | None = None,
    **kwargs: Any,
) -> LatencyBench:
    """:func:`bench_latency` on 32 first turns of the harness (:func:`bench_requests`); with
    ``html``, the results are also written there as a self-contained page
    (:func:`bench_page`). ``kwargs`` go to :func:`bench_latency`.

    >>> r = bench_harness("openai/tiny", "harnesses/livecommerce", api_base=url, concurrency=[1, 4], html="out/bench.html")   # doctest: +SKIP
    >>> r.over_budget_at()                                                                                                   # doctest: +SKIP
    []
    """
    result = bench_latency(model, requests=bench_requests(harness_dir, evals_dir, n=32), **kwargs)
    if html:
        html = Path(html)
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(bench_page(result), encoding="utf-8")
    return result


def _level(c: int, samples: list[Sample], budget_s: float, wall: float, streamed: bool) -> Level:
    ok = [s for s in samples if s.error is None]
    lat = [s.latency_s for s in ok]
    ttft = [s.ttft_s for s in ok if s.ttft_s is not None]
    rates = []
    for s in ok:
        if s.completion_tokens:
            span = s.latency_s - (s.ttft_s or 0.0)
            if span > 0:
                rates.append(s.completion_tokens / span)
    nan = float("nan")
    return Level(
        concurrency=c,
        n=len(samples),
        errors=len(samples) - len(ok),
        p50=percentile(lat, 50) if lat else nan,
        p95=percentile(lat, 95) if lat else nan,
        p99=percentile(lat, 99) if lat else nan,
        ttft_p50=percentile(ttft, 50) if ttft else None,
        ttft_p95=percentile(ttft, 95) if ttft else None,
        tokens_per_s=sum(rates) / len(rates) if rates else None,
        over_budget=sum(x > budget_s for x in lat) / len(lat) if lat else 1.0,
        throughput_rps=len(ok) / wall if wall > 0 else 0.0,
        streamed=streamed and bool(ttft),
        wall_s=wall,
    )


def parse_concurrency(text: str) -> list[int]:
    """``"1,4,16"`` -> ``[1, 4, 16]``.

    >>> parse_concurrency("1, 4,16")
    [1, 4, 16]
    """
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"--concurrency takes positive integers separated by commas, e.g. 1,4,16 (got {text!r})")
        out.append(int(part))
    if not out:
        raise ValueError("--concurrency needs at least one value, e.g. 1,4,16")
    return out


def vllm_serve_command(
    checkpoint: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_name: str | None = None,
    speculative: str | None = None,
    num_speculative_tokens: int = 1,
    extra: list[str] | None = None,
) -> list[str]:
    """``vllm serve`` for a checkpoint with the tool-call parser, optionally with speculative decoding.

    >>> cmd = vllm_serve_command("ckpt", speculative="mtp", num_speculative_tokens=1)
    >>> cmd[:3], cmd[cmd.index("--speculative-config") + 1]
    (['vllm', 'serve', 'ckpt'], '{"method": "mtp", "num_speculative_tokens": 1}')
    """
    cmd = vllm_command(checkpoint, host=host, port=port, served_name=served_name)
    if speculative is not None:
        if speculative not in SPECULATIVE_METHODS:
            raise ValueError(f"unknown speculative method {speculative!r}: choose {' or '.join(SPECULATIVE_METHODS)}")
        if num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be at least 1")
        config: dict[str, Any] = {"method": speculative, "num_speculative_tokens": num_speculative_tokens}
        if speculative == "ngram":
            config["prompt_lookup_max"] = 4
        cmd += ["--speculative-config", json.dumps(config)]
    return cmd + list(extra or [])


def speedup(without: LatencyBench, with_spec: LatencyBench) -> dict[int, float | None]:
    """Decode tokens/s with speculative decoding over without, per concurrency.

    >>> speedup(plain, with_mtp)   # doctest: +SKIP
    """
    out: dict[int, float | None] = {}
    for a in without.levels:
        b = next((lv for lv in with_spec.levels if lv.concurrency == a.concurrency), None)
        ok = b is not None and a.tokens_per_s and b.tokens_per_s and not math.isnan(a.tokens_per_s)
        out[a.concurrency] = round(b.tokens_per_s / a.tokens_per_s, 3) if ok else None
    return out


def bench_page(bench: LatencyBench) -> str:
    """A self-contained HTML page of a latency bench: percentiles per concurrency, TTFT, tokens/s.

    >>> Path("bench.html").write_text(bench_page(result))   # doctest: +SKIP
    """
    rows = []
    for lv in bench.levels:
        rows.append(
            f"<tr><td class=num>{lv.concurrency}</td><td class=num>{lv.n}</td><td class=num>{lv.errors}</td>"
            f"<td class=num>{_s(lv.p50)}</td><td class=num>{_s(lv.p95)}</td><td class=num>{_s(lv.p99)}</td>"
            f"<td class=num>{_s(lv.ttft_p50)}</td><td class=num>{_s(lv.ttft_p95)}</td>"
            f"<td class=num>{'—' if lv.tokens_per_s is None else f'{lv.tokens_per_s:.1f}'}</td>"
            f"<td class=num>{100 * lv.over_budget:.1f}%</td><td class=num>{lv.throughput_rps:.2f}</td></tr>"
        )
    charts = []
    for q in ("p50", "p95", "p99"):
        charts.append(f"<div><h3>{q.upper()} per reply (s)</h3>")
        charts.append(
            bar_chart(
                [(f"c={lv.concurrency}", getattr(lv, q)) for lv in bench.levels if not math.isnan(getattr(lv, q))],
                max_value=bench.budget_s,
                unit="s",
            )
        )
        charts.append("</div>")
    return "\n".join(
        [
            "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
            f"<title>latency bench — {escape(bench.model)}</title><style>{REPORT_CSS}</style></head><body>",
            f"<h1>Latency bench — {escape(bench.model)}</h1>",
            f"<p class=meta>budget {bench.budget_s:g}s per reply · max {bench.max_tokens} tokens per reply"
            + (f" · {escape(bench.note)}" if bench.note else "")
            + "</p>",
            (
                "<table><thead><tr><th>concurrency</th><th>n</th><th>errors</th><th>P50 s</th><th>P95 s</th><th>P99 s</th>"
                "<th>TTFT P50 s</th><th>TTFT P95 s</th><th>tokens/s</th><th>over budget</th><th>req/s</th></tr></thead><tbody>"
            ),
            *rows,
            "</tbody></table><div class=grid>",
            *charts,
            "</div></body></html>",
        ]
    )


def _s(x: float | None) -> str:
    return "—" if x is None or math.isnan(x) else f"{x:.3f}"
