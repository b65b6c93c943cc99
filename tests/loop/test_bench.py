"""The latency bench (percentiles, time to first token, tokens/s, share over budget) and the
vLLM command lines it is run against on a GPU machine."""

from __future__ import annotations

import json

import pytest

from harnessctl.loop.bench import (
    LatencyBench,
    Level,
    bench_latency,
    bench_requests,
    parse_concurrency,
    speedup,
    vllm_serve_command,
)
from harnessctl.models.server import serve_in_background
from tests.conftest import LIVECOMMERCE

from .conftest import EVALS
from .support import StreamingStub, hc


@pytest.fixture(scope="module")
def requests():
    return bench_requests(LIVECOMMERCE, EVALS, n=4)


def test_requests_are_first_turns_of_the_agent_under_the_harness(requests):
    messages, tools = requests[0]
    assert messages[0]["role"] == "system" and "Mia" in messages[0]["content"] and messages[-1]["role"] == "user"
    assert {t["function"]["name"] for t in tools} >= {"load_skill"}


def test_a_streaming_server_gives_time_to_first_token_and_decode_speed(requests):
    with StreamingStub(first_s=0.05, tokens=10, gap_s=0.01) as stub:
        r = bench_latency(
            "openai/stub", api_base=stub.url, concurrency=[1, 2], requests=requests, per_level=3, budget_s=15.0
        )
    assert [lv.concurrency for lv in r.levels] == [1, 2] and all(lv.n == 3 and lv.errors == 0 for lv in r.levels)
    lv = r.levels[0]
    assert lv.streamed and 0.04 <= lv.ttft_p50 <= lv.p50 and lv.p50 <= lv.p95 <= lv.p99
    assert lv.tokens_per_s and lv.tokens_per_s > 10  # 10 tokens in ~0.1 s after the first one
    assert lv.over_budget == 0.0
    assert all(req.get("stream") and req.get("tools") for req in stub.requests)


def test_a_server_that_does_not_stream_is_measured_without_it(requests):
    with StreamingStub(first_s=0.0, tokens=4, refuse_stream=True) as stub:
        r = bench_latency(
            "openai/stub", api_base=stub.url, concurrency=[2], requests=requests, per_level=4, budget_s=0.000001
        )
    lv = r.levels[0]
    assert not lv.streamed and lv.ttft_p50 is None and lv.errors == 0 and "does not stream" in r.note
    assert lv.over_budget == 1.0  # every reply is over a budget of a microsecond


def test_the_bench_cli_on_the_served_tiny_model_reports_ttft_and_tokens_per_s_and_exits_1_when_p95_misses_the_budget(
    tiny_model_path, tmp_path
):
    from typer.testing import CliRunner

    from harnessctl.cli.main import app
    from harnessctl.models.local import LocalModel

    common = [
        "bench",
        "latency",
        "--model",
        "openai/tiny",
        "-n",
        "2",
        "--max-tokens",
        "8",
        # sampled with a seed: an untrained model's greedy text can be only whitespace, which nothing streams
        "--temperature",
        "1",
        "--seed",
        "0",
        "-H",
        str(LIVECOMMERCE),
        "--evals-dir",
        str(EVALS),
    ]
    url, stop = serve_in_background(LocalModel(f"local:{tiny_model_path}"), model_name="tiny")
    try:
        runner = CliRunner()
        ok = runner.invoke(
            app, [*common, "--api-base", url, "-c", "1,2", "--html", str(tmp_path / "bench.html"), "--json"]
        )
        missed = runner.invoke(app, [*common, "--api-base", url, "-c", "1", "--latency-budget", "1ms"])
    finally:
        stop()
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    assert [lv["concurrency"] for lv in data["levels"]] == [1, 2] and all(lv["errors"] == 0 for lv in data["levels"])
    # the embedded server streams: time to first token and decode speed are measured
    assert not data["note"]
    for lv in data["levels"]:
        assert lv["streamed"] and 0 < lv["ttft_p50"] <= lv["p50"] and lv["tokens_per_s"] > 0
    assert "<svg" in (tmp_path / "bench.html").read_text(encoding="utf-8")
    assert missed.exit_code == 1 and "over the 0.001s budget" in missed.output
    assert "does not stream" not in missed.output


@pytest.mark.parametrize(
    "text, error", [("1,x", "positive integers"), ("0", "positive integers"), ("", "at least one value")]
)
def test_bad_concurrency_is_refused(text, error):
    with pytest.raises(ValueError, match=error):
        parse_concurrency(text)


def test_bench_cli_names_the_bad_option_and_exits_2():
    proc = hc("bench", "latency", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "-c", "4,-1")
    assert proc.returncode == 2 and "--concurrency" in proc.stderr and "Traceback" not in proc.stderr


def test_vllm_command_lines_with_and_without_speculative_decoding():
    plain = vllm_serve_command("ckpt/sft", port=8001, served_name="live")
    assert plain[:3] == ["vllm", "serve", "ckpt/sft"]
    assert "--enable-auto-tool-choice" in plain and plain[plain.index("--tool-call-parser") + 1] == "hermes"
    assert plain[plain.index("--served-model-name") + 1] == "live" and "--speculative-config" not in plain
    mtp = vllm_serve_command("local:ckpt/sft", speculative="mtp", num_speculative_tokens=2)
    assert mtp[2] == "ckpt/sft" and json.loads(mtp[mtp.index("--speculative-config") + 1]) == {
        "method": "mtp",
        "num_speculative_tokens": 2,
    }
    ngram = vllm_serve_command("ckpt", speculative="ngram", num_speculative_tokens=4)
    assert json.loads(ngram[ngram.index("--speculative-config") + 1])["method"] == "ngram"
    with pytest.raises(ValueError, match="unknown speculative method"):
        vllm_serve_command("ckpt", speculative="medusa")


def _bench(*levels: tuple[int, float | None]) -> LatencyBench:
    nan = float("nan")
    return LatencyBench(
        "m",
        None,
        15.0,
        64,
        levels=[
            Level(c, 4, 0, 1.0, 1.0, 1.0, 0.1, 0.1, tps, 0.0, 1.0, True, 4.0)
            if tps is not None
            else Level(c, 4, 4, nan, nan, nan, None, None, None, 1.0, 0.0, False, 4.0)
            for c, tps in levels
        ],
    )


def test_speedup_is_the_ratio_of_decode_speeds_per_concurrency():
    without = _bench((1, 40.0), (4, 25.0), (16, None))
    with_spec = _bench((1, 67.6), (4, 30.0), (16, 12.0))
    # concurrency 16 has no decode speed without speculation (every request failed): no ratio
    assert speedup(without, with_spec) == {1: 1.69, 4: 1.2, 16: None}
