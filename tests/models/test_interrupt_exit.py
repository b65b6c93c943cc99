"""Ctrl-C while a batch runs: the process leaves within a few seconds, and a second Ctrl-C during
the exit prints no atexit traceback (and never aborts the process mid-batch)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Ctrl-C as in a terminal, even where the tests run with SIGINT ignored (a background job: its
# children inherit that, and Python then installs no KeyboardInterrupt handler).
BUSY = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from harnessctl.models.batching import RequestBatcher
b = RequestBatcher(lambda xs: [time.sleep(60) for _ in xs], name="busy")
future = b.submit("x", None)
print("running", flush=True)
future.result()
"""


def start_busy() -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", BUSY],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout.readline().strip() == "running"
    time.sleep(0.2)
    return proc


def test_one_ctrl_c_during_a_batch_exits_within_a_few_seconds():
    proc = start_busy()
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - started < 4  # not the batch's 60 s
    assert proc.returncode == 130 and "terminate called" not in stderr


def test_two_ctrl_c_during_a_batch_exit_quickly_and_cleanly():
    proc = start_busy()
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)  # pressed again while exit waits for the batch
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - started < 5
    assert proc.returncode in (130, -signal.SIGINT)  # the second one may end it as a signal does
    assert "atexit" not in stderr and "terminate called" not in stderr
