"""The request batcher on its own: grouping by key, the batch size cap, failures kept to their
request, callers that gave up, and no thread left behind."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harnessctl.models.batching import BatchStats, RequestBatcher


class Recorder:
    """A ``run`` that notes every batch it gets; a payload ``"boom"`` fails the whole batch, an
    ``"err"`` fails only itself."""

    def __init__(self, delay_s: float = 0.0):
        self.batches: list[list] = []
        self.delay_s = delay_s

    def __call__(self, payloads: list) -> list:
        self.batches.append(list(payloads))
        time.sleep(self.delay_s)
        if "boom" in payloads:
            raise RuntimeError("the batch fell over")
        return [ValueError(p) if p == "err" else f"done:{p}" for p in payloads]


def submit_all(batcher: RequestBatcher, items: list[tuple]) -> list:
    def one(item):
        try:
            return batcher.call(*item)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            return e

    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(one, items))


def test_requests_with_one_key_share_a_batch_and_others_wait_for_their_own():
    run = Recorder()
    b = RequestBatcher(run, max_batch=8, gather_s=0.3)
    out = submit_all(b, [("a1", "A"), ("b1", "B"), ("a2", "A"), ("b2", "B"), ("a3", "A")])
    assert out == ["done:a1", "done:b1", "done:a2", "done:b2", "done:a3"]
    assert sorted(sorted(x) for x in run.batches) == [["a1", "a2", "a3"], ["b1", "b2"]]
    assert b.stats == BatchStats(requests=5, batches=2, sizes={3: 1, 2: 1})


def test_no_batch_is_larger_than_max_batch_and_a_none_key_runs_alone():
    run = Recorder()
    b = RequestBatcher(run, max_batch=3, gather_s=0.3)
    out = submit_all(b, [(f"x{i}", "X") for i in range(7)] + [("solo1", None), ("solo2", None)])
    assert out == [f"done:x{i}" for i in range(7)] + ["done:solo1", "done:solo2"]
    assert max(len(x) for x in run.batches) == 3
    assert sorted(len(x) for x in run.batches if x[0].startswith("x")) == [1, 3, 3]
    # each alone (in either order: the pool's threads submit them in no fixed order)
    assert sorted(x for x in run.batches if x[0].startswith("solo")) == [["solo1"], ["solo2"]]


def test_max_batch_one_turns_batching_off():
    run = Recorder()
    submit_all(RequestBatcher(run, max_batch=1, gather_s=0.3), [(i, "K") for i in range(4)])
    assert sorted(run.batches) == [[0], [1], [2], [3]]


def test_a_failure_stays_with_its_request():
    run = Recorder()
    b = RequestBatcher(run, max_batch=8, gather_s=0.3)
    out = submit_all(b, [("ok1", "K"), ("err", "K"), ("boom", "K"), ("ok2", "K")])
    # "err" fails itself; "boom" broke its batch, which was then run one request at a time
    assert out[0] == "done:ok1" and out[3] == "done:ok2"
    assert isinstance(out[1], ValueError) and isinstance(out[2], RuntimeError)
    assert len(run.batches[0]) == 4 and sorted(map(len, run.batches[1:])) == [1, 1, 1, 1]


def test_a_result_list_of_the_wrong_length_is_an_error_not_a_hang():
    b = RequestBatcher(lambda xs: [], max_batch=4)
    with pytest.raises(RuntimeError, match="0 results for 1 requests"):
        b.call("x", "K")


def test_a_cancelled_await_is_dropped_before_it_runs_and_no_thread_outlives_the_queue():
    run = Recorder(delay_s=0.2)
    b = RequestBatcher(run, max_batch=4, gather_s=0.0)

    async def scenario():
        first = asyncio.ensure_future(b.acall("first", None))  # keeps the worker busy for 0.2 s
        await asyncio.sleep(0.05)
        doomed = asyncio.ensure_future(b.acall("doomed", None))
        await asyncio.sleep(0.01)
        doomed.cancel()
        return await first, await asyncio.gather(doomed, return_exceptions=True)

    threads = threading.active_count()
    first, (doomed,) = asyncio.run(scenario())
    assert first == "done:first" and isinstance(doomed, asyncio.CancelledError)
    time.sleep(0.1)
    assert run.batches == [["first"]]
    assert threading.active_count() == threads  # the worker ended with the queue


def test_max_batch_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        RequestBatcher(lambda xs: xs, max_batch=0)
