"""Progress of long work on stderr: one rich bar per task on a terminal, plain lines in a log file.

A bar redrawn in a file shows only when the work ends, so when stderr is not a terminal (a job
scheduler's log, ``2> log.txt``) each task prints one line at each tenth of its total, and at
least every half minute while a tenth takes longer, instead::

    livestream 20/200 (9 s, 2.2/s, about 1 min 22 s left)

Either way a line says how much is done, the rate and the time left.

Every command that runs cases, variants or episodes reports through :func:`progress_bars`.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

#: ``update(task, done, total)``: the task's name, how much of it is done, and its total.
Update = Callable[[str, int, int], None]
#: A log file hears from a task at least this often (seconds), even when a tenth takes longer.
LINE_EVERY_S = 30.0


def duration_text(seconds: float) -> str:
    """A duration as a person reads it.

    >>> duration_text(42.4), duration_text(82), duration_text(3725)
    ('42 s', '1 min 22 s', '1 h 2 min')
    """
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def rate_text(done: int, elapsed: float, unit: str = "") -> str:
    """Items per second (or per minute when slower than one a second).

    >>> rate_text(22, 10), rate_text(3, 60, " cases")
    ('2.2/s', '3.0 cases/min')
    """
    if elapsed <= 0 or done <= 0:
        return "—"
    per_s = done / elapsed
    return f"{per_s:.1f}{unit}/s" if per_s >= 1 else f"{per_s * 60:.1f}{unit}/min"


def prefixed(update: Update | None, prefix: str) -> Update | None:
    """``update`` with each task named ``"<prefix> <task>"``, so that work done again over the
    same suites (a loop's candidates, a release gate's two runs) gets bars of its own: a bar
    whose count went back to 0 would show neither its rate nor the time left.

    >>> seen = []
    >>> prefixed(lambda *a: seen.append(a), "c1-slice")("livestream", 2, 6); seen
    [('c1-slice livestream', 2, 6)]
    """
    if update is None:
        return None
    return lambda task, done, total: update(f"{prefix} {task}" if task else prefix, done, total)


@contextlib.contextmanager
def progress_bars(label: str = "", *, enabled: bool = True, console: Any = None, eta: bool = True) -> Iterator[Update]:
    """Yield ``update(task, done, total)``; a task's first update shows it (a command refused
    before any work shows no empty bar). ``label`` names a task given as ``""``.

    >>> import io
    >>> from rich.console import Console
    >>> log = Console(file=io.StringIO())
    >>> with progress_bars("eval", console=log) as update:
    ...     for done in range(1, 5):
    ...         update("livestream", done, 4)
    >>> [line.split(" (")[0] for line in log.file.getvalue().splitlines()]
    ['livestream 1/4', 'livestream 2/4', 'livestream 3/4', 'livestream 4/4']
    """
    if not enabled:
        yield lambda *_: None
        return
    if console is None:
        from rich.console import Console

        console = Console(stderr=True)
    if not console.is_terminal:
        yield _plain_lines(label, console)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items a second (a minute when slower), from rich's windowed speed."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            if not speed and task.completed and task.elapsed:  # rich's window holds too few samples yet
                speed = task.completed / task.elapsed
            if not speed:
                return Text("—", style="dim")
            return Text(f"{speed:.1f}/s" if speed >= 1 else f"{speed * 60:.1f}/min", style="cyan")

    columns: list[Any] = [
        TextColumn("[bold]{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
    ]
    if eta:
        columns += [TextColumn("eta"), TimeRemainingColumn()]
    bars = Progress(*columns, console=console, transient=False)
    tasks: dict[str, Any] = {}

    def update(task: str, done: int, total: int) -> None:
        if not tasks:
            bars.start()
        if task not in tasks:
            tasks[task] = bars.add_task(task or label, total=total)
        bars.update(tasks[task], completed=done, total=total)

    try:
        yield update
    finally:
        if tasks:
            bars.stop()


def _plain_lines(label: str, console: Any) -> Update:
    started, shown, last = time.perf_counter(), {}, {}

    def update(task: str, done: int, total: int) -> None:
        now = time.perf_counter()
        tenth = done * 10 // total if total else 10
        first = shown.setdefault(task, (done, now))  # a resumed task starts part done
        due = tenth > last.get(task, (0, 0.0))[0] or now - last.get(task, (0, started))[1] >= LINE_EVERY_S
        if not done or not due:
            return
        last[task] = (max(tenth, last.get(task, (0, 0.0))[0]), now)
        elapsed = now - started
        ran, ran_s = done - first[0], now - first[1]
        parts = [duration_text(elapsed)]
        if ran > 0 and ran_s > 0:
            parts.append(rate_text(ran, ran_s))
            if done < total:
                parts.append(f"about {duration_text(math.ceil((total - done) * ran_s / ran))} left")
        console.print(f"{task or label} {done}/{total} ({', '.join(parts)})", highlight=False, soft_wrap=True)

    return update
