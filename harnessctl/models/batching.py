"""Group concurrent requests into batches for one worker: the embedded model's dynamic batching.

Callers on any number of threads (or one asyncio loop) :meth:`RequestBatcher.submit` a request
with a *key*. One worker thread takes the oldest waiting request, gathers the other waiting
requests with the same key (up to ``max_batch``, waiting up to ``gather_s`` for more to come, the
window restarting at each arrival), and hands them to ``run`` as one list. Requests whose key is
``None`` always run alone. The worker starts with the first request and ends when the queue is
empty, so an idle batcher holds no thread. At interpreter exit (a Ctrl-C, say) every batcher
drops its waiting requests and lets the batch it is running finish: a worker still inside the
model while the process tears down aborts it (``terminate called without an active exception``)
instead of exiting with the caller's code.

``run(payloads)`` returns one result per payload, in order; an item that is an exception fails
that request only. When ``run`` itself raises on a batch of several, each request is retried
alone, so one bad request never fails the others.

>>> b = RequestBatcher(lambda xs: [x * 2 for x in xs], max_batch=4)
>>> b.call(21, key="double")
42
>>> b.stats.requests, b.stats.batches
(1, 1)
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

#: How long the worker waits for more requests with the same key before it starts a batch.
GATHER_S = 0.005
#: The longest a first request waits for company, however many keep arriving.
MAX_GATHER_S = 0.05
#: How long exit waits for a running batch to finish.
CLOSE_WAIT_S = 30.0


@dataclass
class BatchStats:
    """What a batcher did: requests served, batches run, and how many batches had each size.

    >>> s = BatchStats(requests=5, batches=2, sizes={4: 1, 1: 1})
    >>> s.largest, s.mean_size
    (4, 2.5)
    """

    requests: int = 0
    batches: int = 0
    sizes: dict[int, int] = field(default_factory=dict)

    @property
    def largest(self) -> int:
        return max(self.sizes, default=0)

    @property
    def mean_size(self) -> float:
        return self.requests / self.batches if self.batches else 0.0


@dataclass
class _Job:
    payload: Any
    key: Hashable | None
    future: Future
    arrived: float


class RequestBatcher:
    """Runs ``run(list_of_payloads) -> list_of_results`` on one worker thread, batching the
    requests that wait together and share a key (``max_batch=1`` turns batching off)."""

    def __init__(
        self,
        run: Callable[[list[Any]], Sequence[Any]],
        *,
        max_batch: int = 16,
        gather_s: float = GATHER_S,
        max_gather_s: float = MAX_GATHER_S,
        name: str = "batcher",
    ):
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._run = run
        self.max_batch = max_batch
        self.gather_s = gather_s
        self.max_gather_s = max(max_gather_s, gather_s)
        self.name = name
        self.stats = BatchStats()
        self._queue: deque[_Job] = deque()
        self._cv = threading.Condition()
        self._worker: threading.Thread | None = None
        _LIVE.add(self)

    def close(self, timeout: float | None = CLOSE_WAIT_S) -> int:
        """Cancel the requests still waiting and wait (up to ``timeout`` s) for the batch running
        now; returns how many were cancelled. Later submissions start a new worker as before.

        >>> RequestBatcher(lambda xs: xs).close()
        0
        """
        with self._cv:
            waiting, self._queue = list(self._queue), deque()
            worker = self._worker
            self._cv.notify_all()
        for job in waiting:
            job.future.cancel()
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)
        return len(waiting)

    def submit(self, payload: Any, key: Hashable | None) -> Future:
        """Queue one request; its result (or exception) arrives on the returned future."""
        job = _Job(payload, None if self.max_batch == 1 else key, Future(), time.monotonic())
        with self._cv:
            self._queue.append(job)
            self._cv.notify_all()
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name=f"harnessctl-{self.name}", daemon=True)
                self._worker.start()
        return job.future

    def call(self, payload: Any, key: Hashable | None) -> Any:
        """Submit and wait: the request's result, or its exception raised here."""
        return self.submit(payload, key).result()

    async def acall(self, payload: Any, key: Hashable | None) -> Any:
        """Submit and await, without holding a thread while the request waits."""
        return await asyncio.wrap_future(self.submit(payload, key))

    # -- the worker ---------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cv:
                batch = self._take()
                if batch is None:
                    self._worker = None
                    return
            if batch:
                self._execute(batch)

    def _take(self) -> list[_Job] | None:
        """The next batch (called with the lock held); ``None`` when the queue is empty."""
        if not self._queue:
            return None
        first = self._queue[0]
        if first.key is not None and self.gather_s > 0:
            started = time.monotonic()
            while self._matching(first.key) < self.max_batch:
                last = max(j.arrived for j in self._queue)
                now = time.monotonic()
                wait = min(last + self.gather_s, started + self.max_gather_s) - now
                if wait <= 0:
                    break
                self._cv.wait(wait)
        batch: list[_Job] = [self._queue.popleft()]
        if first.key is not None:
            kept: deque[_Job] = deque()
            while self._queue:
                job = self._queue.popleft()
                if job.key == first.key and len(batch) < self.max_batch:
                    batch.append(job)
                else:
                    kept.append(job)
            self._queue = kept
        # A request whose caller gave up (a cancelled await) is dropped here.
        return [job for job in batch if job.future.set_running_or_notify_cancel()]

    def _matching(self, key: Hashable) -> int:
        return sum(1 for j in self._queue if j.key == key)

    def _execute(self, batch: list[_Job]) -> None:
        try:
            results = list(self._run([job.payload for job in batch]))
            if len(results) != len(batch):
                raise RuntimeError(f"{self.name}: run returned {len(results)} results for {len(batch)} requests")
        except BaseException as e:  # noqa: BLE001 - handed to the callers, never lost in this thread
            if len(batch) == 1:
                results = [e]
            else:  # isolate the failure: each request alone
                for job in batch:
                    self._execute([job])
                return
        with self._cv:
            self.stats.requests += len(batch)
            self.stats.batches += 1
            self.stats.sizes[len(batch)] = self.stats.sizes.get(len(batch), 0) + 1
        for job, result in zip(batch, results, strict=True):
            if isinstance(result, BaseException):
                job.future.set_exception(result)
            else:
                job.future.set_result(result)


#: Every batcher alive, drained at exit (a weak set: a batcher dropped by its owner is not kept).
_LIVE: weakref.WeakSet[RequestBatcher] = weakref.WeakSet()


#: How long exit waits, all batchers together, for the batches running then (a Ctrl-C lands mid-batch).
EXIT_WAIT_S = 2.0


@atexit.register
def _close_all(wait_s: float = EXIT_WAIT_S) -> bool:
    """Cancel what waits and give running batches ``wait_s`` to end; a second Ctrl-C here ends the
    wait quietly. A batch still running then is in native code (torch): tearing the interpreter
    down under it aborts the process ("terminate called without an active exception"), so the
    process leaves at once instead, its output flushed. Returns whether every worker ended.

    >>> _close_all(0.1)
    True
    """
    deadline = time.monotonic() + wait_s
    try:
        for batcher in list(_LIVE):
            batcher.close(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:
        pass
    busy = [b for b in list(_LIVE) if b._worker is not None and b._worker.is_alive()]
    if not busy:
        return True
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)
