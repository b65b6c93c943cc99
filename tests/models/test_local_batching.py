"""Concurrent turns on one embedded model run as one batch, and every caller gets what it would
get alone: the tiny model in process, over asyncio, behind the embedded server and under
`harnessctl eval -j 4`."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.harness import render_harness
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.litellm_backend import LiteLLMModel
from harnessctl.models.local import ContextLengthError, LocalModel
from harnessctl.models.server import serve_in_background

REPO = Path(__file__).resolve().parents[2]
QUERIES = (
    "how much is P012?",
    "is the blue one still in stock",
    "hi",
    "do you ship to paris, and what about returns and the warranty?",
    "P001 colour?",
    "any bundle price?",
    "ok",
    "what's the discount code today",
)
#: Different budgets in one batch: each row must stop at its own.
BUDGETS = (40, 8, 40, 23, 40, 1, 31, 40)


@pytest.fixture(scope="module")
def alone(tiny_model_path) -> LocalModel:
    """The reference: one request at a time."""
    return LocalModel(f"local:{tiny_model_path}", max_batch=1)


@pytest.fixture(scope="module")
def together(tiny_model_path) -> LocalModel:
    """Batches of up to 8; a long gather window so that requests started together share one."""
    return LocalModel(f"local:{tiny_model_path}", max_batch=8, gather_s=0.5)


@pytest.fixture(scope="module")
def chats(livecommerce_path):
    from harnessctl.harness import load_harness

    rendered = render_harness(load_harness(livecommerce_path, validate=False))
    messages = [
        [{"role": "system", "content": rendered.system_prompt}, {"role": "user", "content": q}] for q in QUERIES
    ]
    return messages, rendered.tools


def in_threads(model: LocalModel, calls: list[tuple]) -> list:
    """Run ``model.generate(*call)`` for every call at once, one thread each; exceptions are returned."""

    def one(call):
        try:
            return model.generate(*call[:3], **(call[3] if len(call) > 3 else {}))
        except Exception as e:  # noqa: BLE001 - the test inspects it
            return e

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(one, calls))


def sizes_since(model: LocalModel, before: dict[int, int]) -> dict[int, int]:
    now = model.batch_stats.sizes
    return {k: now[k] - before.get(k, 0) for k in now if now[k] - before.get(k, 0)}


def assert_same_turn(solo, batched):
    """What a caller sees is the same, token for token; logprobs agree to float rounding."""
    assert batched.completion_token_ids == solo.completion_token_ids
    assert batched.prompt_token_ids == solo.prompt_token_ids
    assert (batched.content, batched.finish_reason) == (solo.content, solo.finish_reason)
    assert [(c.name, c.arguments) for c in batched.tool_calls] == [(c.name, c.arguments) for c in solo.tool_calls]
    assert (batched.prompt_tokens, batched.completion_tokens) == (solo.prompt_tokens, solo.completion_tokens)
    assert batched.completion_tokens == len(batched.completion_token_ids) == len(batched.logprobs)
    assert batched.logprobs == pytest.approx(solo.logprobs, abs=1e-4)


def test_greedy_turns_batched_together_are_token_for_token_what_each_gets_alone(alone, together, chats):
    messages, tools = chats
    calls = [(m, tools, GenerationSettings(max_tokens=n)) for m, n in zip(messages, BUDGETS, strict=True)]
    solo = [alone.generate(*call) for call in calls]
    before, shared = dict(together.batch_stats.sizes), together.shared_prefix_tokens
    batched = in_threads(together, calls)
    assert sizes_since(together, before) == {8: 1}  # one model.generate for all eight
    # the system prompt and tool list, common to all eight, computed once, not eight times
    assert together.shared_prefix_tokens - shared >= 7 * 500
    assert len({r.prompt_tokens for r in solo}) > 1  # prompts of different lengths: left padding was used
    for s, b, n in zip(solo, batched, BUDGETS, strict=True):
        assert_same_turn(s, b)
        assert len(b.completion_token_ids) <= n
        assert 0 < b.latency_s
    assert batched[5].completion_token_ids == solo[5].completion_token_ids and len(batched[5].completion_token_ids) == 1


def test_each_row_ends_at_its_own_stop_token(tiny_model_path, chats):
    # The untrained model never writes its end-of-turn token; make a token it writes early in one
    # reply a stop token, so rows of one batch stop at different steps (and the rest wait as padding).
    alone = LocalModel(f"local:{tiny_model_path}", max_batch=1)
    together = LocalModel(f"local:{tiny_model_path}", max_batch=8, gather_s=0.5)
    messages, tools = chats
    calls = [(m, tools, GenerationSettings(max_tokens=24)) for m in messages[:4]]
    probe = alone.generate(*calls[0]).completion_token_ids
    for model in (alone, together):
        model._stop_ids = [*model._stop_ids, probe[3]]
    solo = [alone.generate(*call) for call in calls]
    batched = in_threads(together, calls)
    assert together.batch_stats.sizes == {4: 1}
    assert solo[0].finish_reason == "stop" and len(solo[0].completion_token_ids) <= 4
    assert solo[0].completion_token_ids[-1] == probe[3]
    for s, b in zip(solo, batched, strict=True):
        assert_same_turn(s, b)


def test_prompts_with_little_in_common_are_padded_whole_and_still_exact(alone, together):
    chats = [[{"role": "user", "content": q}] for q in QUERIES[:4]]  # share only the turn marker
    calls = [(m, [], GenerationSettings(max_tokens=n)) for m, n in zip(chats, BUDGETS[:4], strict=True)]
    before, shared = dict(together.batch_stats.sizes), together.shared_prefix_tokens
    batched = in_threads(together, calls)
    assert sizes_since(together, before) == {4: 1} and together.shared_prefix_tokens == shared
    for call, b in zip(calls, batched, strict=True):
        assert_same_turn(alone.generate(*call), b)


def test_asyncio_callers_share_a_batch_without_a_thread_each(alone, together, chats):
    messages, tools = chats
    settings = [GenerationSettings(max_tokens=n, seed=i) for i, n in enumerate(BUDGETS)]  # greedy: a seed is moot
    solo = [alone.generate(m, tools, s) for m, s in zip(messages, settings, strict=True)]
    before = dict(together.batch_stats.sizes)

    async def all_at_once():
        return await asyncio.gather(*(together.agenerate(m, tools, s) for m, s in zip(messages, settings, strict=True)))

    threads = threading.active_count()
    batched = asyncio.run(all_at_once())
    assert sizes_since(together, before) == {8: 1}
    assert threading.active_count() <= threads + 1  # at most the model's worker, gone once idle
    for s, b in zip(solo, batched, strict=True):
        assert_same_turn(s, b)


def test_requests_that_cannot_share_run_alone_and_keep_their_own_settings(alone, together, chats):
    messages, tools = chats
    greedy = GenerationSettings(max_tokens=12)
    seeded = GenerationSettings(max_tokens=12, temperature=1.0, seed=7)
    warm, warmer = (
        GenerationSettings(max_tokens=12, temperature=0.7),
        GenerationSettings(max_tokens=12, temperature=1.3),
    )
    streamed: list[str] = []
    calls = [
        (messages[0], tools, greedy),
        (messages[1], tools, seeded),
        (messages[2], tools, greedy),
        (messages[3], tools, warm),
        (messages[4], tools, GenerationSettings(max_tokens=12, temperature=1.0, seed=0), {"on_text": streamed.append}),
        (messages[5], tools, warm),
        (messages[6], tools, warmer),
        (messages[7], tools, warmer),
    ]
    before = dict(together.batch_stats.sizes)
    out = in_threads(together, calls)
    # greedy, warm and warmer each one batch of two; the seeded and the streamed turn alone
    assert sizes_since(together, before) == {2: 3, 1: 2}
    assert_same_turn(alone.generate(*calls[0]), out[0])
    assert_same_turn(alone.generate(*calls[1]), out[1])  # a seed still fixes a sampled turn
    assert streamed and out[4].completion_token_ids == alone.generate(*calls[4][:3]).completion_token_ids
    for r, call in zip(out, calls, strict=True):
        assert 1 <= r.completion_tokens == len(r.completion_token_ids) == len(r.logprobs) <= call[2].max_tokens


def test_a_request_that_fails_fails_alone_and_its_batch_mates_get_their_answers(alone, together, chats):
    messages, tools = chats
    too_long = GenerationSettings(max_tokens=together.max_positions)
    calls = [(m, tools, GenerationSettings(max_tokens=16)) for m in messages[:4]]
    calls.insert(2, (messages[5], tools, too_long))
    calls.insert(4, ([], tools, GenerationSettings(max_tokens=16)))  # the chat template refuses an empty chat
    before = dict(together.batch_stats.sizes)
    out = in_threads(together, calls)
    assert isinstance(out[2], ContextLengthError) and "exceeds" in str(out[2])
    assert sizes_since(together, before) == {6: 1}  # one batch: two requests failed in it, four generated
    assert isinstance(out[4], ModelError) and "chat template failed" in str(out[4])
    for i in (0, 1, 3, 5):
        assert_same_turn(alone.generate(*calls[i]), out[i])


def test_the_embedded_server_batches_concurrent_requests(alone, together, chats):
    messages, tools = chats
    settings = GenerationSettings(max_tokens=16)
    url, stop = serve_in_background(together, model_name="tiny")
    before = dict(together.batch_stats.sizes)
    try:
        client = LiteLLMModel("openai/tiny", api_base=url)
        with ThreadPoolExecutor(4) as pool:
            served = list(pool.map(lambda m: client.generate(m, tools, settings), messages[:4]))
    finally:
        stop()
    assert sizes_since(together, before) == {4: 1}
    for m, r in zip(messages[:4], served, strict=True):
        direct = alone.generate(m, tools, settings)
        assert (r.prompt_tokens, r.completion_tokens) == (direct.prompt_tokens, direct.completion_tokens)
        assert r.content == direct.content


def _records(run: Path) -> dict[str, dict]:
    """A run's records by case id, without what differs between two runs of the same model:
    wall-clock times, and logprobs (compared separately, to float rounding)."""
    out = {}
    for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        d.pop("latency_s")
        record = d["record"]
        record.pop("latency_s")
        for step in record["model_steps"]:
            step.pop("latency_s")
        out[d["case_id"]] = d
    return out


def test_eval_with_four_jobs_writes_the_records_one_job_writes(tiny_model_path, tmp_path):
    runs = tmp_path / "runs"
    common = ["--model", f"local:{tiny_model_path}", "--suite", "livestream,ifeval", "--limit", "4"]
    common += ["--max-tokens", "24", "--no-cache", "--runs-dir", str(runs), "--evals-dir", str(REPO / "evals")]
    common += ["-H", str(REPO / "harnesses" / "livecommerce")]
    for jobs in ("1", "4"):
        result = CliRunner().invoke(app, ["eval", *common, "-j", jobs, "--run-id", f"j{jobs}", "--json"])
        assert result.exit_code == 0, result.output
    serial, concurrent = _records(runs / "j1"), _records(runs / "j4")
    assert len(serial) == 8 and serial.keys() == concurrent.keys()
    for case_id, want in serial.items():
        got = concurrent[case_id]
        want_lp = [t.pop("logprobs", None) for t in want["record"].get("turn_token_ids") or []]
        got_lp = [t.pop("logprobs", None) for t in got["record"].get("turn_token_ids") or []]
        assert got == want, case_id
        for a, b in zip(want_lp, got_lp, strict=True):
            assert (a is None) == (b is None) and (a is None or b == pytest.approx(a, abs=1e-4)), case_id


def test_the_eval_runner_hands_its_concurrent_cases_to_the_model_together(tiny_model_path, tmp_path):
    from harnessctl.eval.runner import EvalConfig, run_eval

    model = LocalModel(f"local:{tiny_model_path}")  # the defaults `eval --model local:PATH` gets
    config = EvalConfig(
        model=model.name,
        suites=["livestream"],
        limit=4,
        jobs=4,
        max_tokens=16,
        cache=False,
        runs_dir=str(tmp_path / "runs"),
        evals_dir=str(REPO / "evals"),
        harness_path=str(REPO / "harnesses" / "livecommerce"),
    )
    run_eval(config, backend=model, run_id="together")
    assert model.batch_stats.requests >= 4 and model.batch_stats.largest >= 2
