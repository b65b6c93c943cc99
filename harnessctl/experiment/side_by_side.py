"""Arms that train side by side (``experiment hat --train-jobs 2``): arms whose parent is trained
(fixed-SFT and HSA-SFT both start from the base) train at once, each in a process of its own with
its share of the CPU cores.

What it buys depends on the machine: on two CPU cores torch already keeps both busy with one
tiny-model SFT run, and ``benchmarks/bench_side_by_side.py`` measured the two arms side by side at
0.97 of the time of one after the other (60 steps each) — so the default stays one arm at a time.
On a machine with more cores than one small run can use, or when the two arms' runs should not
share a process, it is there. The result of an arm does not depend on it: each process trains
exactly what the arm's config says, into the arm's folder, and resumes from its checkpoints.

Each process writes its trainer's lines to ``arms/<arm>/train.log``; the parent shows one bar per
arm. Ctrl-C reaches the parent, which passes one interrupt to each process: every arm saves a
checkpoint and the same command continues them.

>>> from harnessctl.experiment.plan import ARMS
>>> ARMS["fixed-sft"].parent == ARMS["hsa-sft"].parent == "base"
True
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessctl.experiment.arms import StudyError, StudyInterrupted, train_arm
from harnessctl.experiment.plan import ARMS, Arm, StudyPlan

#: The trainer's lines of an arm trained in a process of its own.
TRAIN_LOG = "train.log"
_STEP = re.compile(r"step (\d+)/(\d+)")


def train_side_by_side(
    plan: StudyPlan, arms: list[Arm], root: Path, say: Callable[[str], None], progress: bool
) -> list[str]:
    """Train ``arms`` (whose parents are trained) at once, one process each, the cores shared out
    evenly; returns their names. Raises ``StudyInterrupted`` when stopped with Ctrl-C (every arm
    saved a checkpoint) and ``StudyError`` naming each arm that failed."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch state shared
    threads = max(1, (os.cpu_count() or 1) // len(arms))
    jobs = []
    for arm in arms:
        log = root / "arms" / arm.name / TRAIN_LOG
        log.parent.mkdir(parents=True, exist_ok=True)
        receive, send = context.Pipe(duplex=False)
        process = context.Process(
            target=_train_in_process,
            args=(plan.to_dict(), arm.name, str(root), threads, str(log), send),
            name=f"train-{arm.name}",
        )
        process.start()
        send.close()
        jobs.append((arm, process, receive, log))
    names = " and ".join(a.name for a in arms)
    say(f"training {names} side by side, {threads} core(s) each; their lines go to arms/<arm>/{TRAIN_LOG}")
    interrupts = 0
    try:  # Ctrl-C as a KeyboardInterrupt, also in a background job started with SIGINT ignored
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        previous = None
    try:
        while True:
            try:
                _watch(jobs, progress)
                break
            except KeyboardInterrupt:
                # the processes run in process groups of their own: each gets exactly the
                # interrupts the parent got (one: save a checkpoint and stop; two: stop at once)
                interrupts += 1
                for _, process, _, _ in jobs:
                    if process.is_alive():
                        os.kill(process.pid, signal.SIGINT)
                if interrupts == 1:
                    say(f"stopping {names}: each saves a checkpoint (Ctrl-C again stops at once)")
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    outcomes = []
    for arm, process, receive, log in jobs:
        ended = ("error", f"arm {arm.name}: its process ended with code {process.exitcode} before reporting")
        outcome = receive.recv() if receive.poll() else ended
        outcomes.append((arm, outcome, log))
    stopped = [outcome[1] for _, outcome, _ in outcomes if outcome and outcome[0] == "interrupted"]
    failed = [f"{outcome[1]} (its log: {log})" for _, outcome, log in outcomes if outcome and outcome[0] == "error"]
    if failed:
        raise StudyError("; ".join(failed))
    if stopped or interrupts:
        raise StudyInterrupted("; ".join(stopped) or f"{names} stopped")
    return [a.name for a in arms]


def _watch(jobs: list[tuple[Arm, Any, Any, Path]], progress: bool) -> None:
    """Wait for every process, with one bar per arm (its step, read from its log) on a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    bars = None
    if progress and console.is_terminal:
        bars = Progress(
            TextColumn("[bold]train {task.description}[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
        )
        tasks = {arm.name: bars.add_task(arm.name, total=None) for arm, _, _, _ in jobs}
        bars.start()
    try:
        while any(process.is_alive() for _, process, _, _ in jobs):
            if bars is not None:
                for arm, _, _, log in jobs:
                    step = last_step(log)
                    if step:
                        bars.update(tasks[arm.name], completed=step[0], total=step[1])
            for _, process, _, _ in jobs:
                process.join(timeout=1.0 / len(jobs))
    finally:
        if bars is not None:
            bars.stop()


def last_step(log: Path) -> tuple[int, int] | None:
    """The last ``step N/M`` a trainer wrote to ``log`` (its end only is read), or None.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "train.log"
    >>> _ = p.write_text("train sft step 5/600  loss 1.2\\ntrain sft step 10/600  loss 1.1\\n")
    >>> last_step(p)
    (10, 600)
    """
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = _STEP.findall(tail)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def _train_in_process(plan: dict[str, Any], arm_name: str, root: str, threads: int, log: str, send: Any) -> None:
    """One arm's training in a process of its own: its output to ``log``, ``threads`` torch
    threads; sends back None, or ``(kind, message)`` for an interrupt or an error."""
    if hasattr(os, "setpgrp"):  # POSIX: a terminal's Ctrl-C reaches the parent only, which passes it on once
        os.setpgrp()
        threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    import torch

    torch.set_num_threads(threads)

    started = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"== arm {arm_name}, started {started}, {threads} thread(s)", flush=True)
    try:
        train_arm(StudyPlan.from_dict(plan), ARMS[arm_name], Path(root), lambda m: print(m, flush=True), True)
        outcome = None
    except StudyInterrupted as e:
        outcome = ("interrupted", str(e))
    except KeyboardInterrupt:
        outcome = ("interrupted", f"arm {arm_name}: stopped at once; it continues from its last checkpoint")
    except StudyError as e:
        outcome = ("error", str(e))
    except Exception as e:  # the traceback goes to the arm's log; the parent names the arm and the log
        traceback.print_exc()
        outcome = ("error", f"arm {arm_name}: {type(e).__name__}: {e}")
    send.send(outcome)


def _exit_with_parent(parent: int) -> None:
    """Outside the parent's process group, a process would go on training after the parent was
    killed (and race the study run next); it ends when the parent is gone, like a killed one."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
