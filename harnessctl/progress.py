"""Progress of long work on stderr: one rich bar per task on a terminal, plain lines in a log file.

A bar redrawn in a file shows only when the work ends, so when stderr is not a terminal (a job
scheduler's log, ``2> log.txt``) each task prints one line at each tenth of its total instead::

    livestream 20/200 (9 s)

Every command that runs cases, variants or episodes reports through :func:`progress_bars`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

#: ``update(task, done, total)``: the task's name, how much of it is done, and its total.
Update = Callable[[str, int, int], None]


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
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [
        TextColumn("[bold]{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
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
    started, shown = time.perf_counter(), {}

    def update(task: str, done: int, total: int) -> None:
        tenth = done * 10 // total if total else 10
        if done and tenth > shown.get(task, 0):
            shown[task] = tenth
            elapsed = time.perf_counter() - started
            console.print(f"{task or label} {done}/{total} ({elapsed:.0f} s)", highlight=False, soft_wrap=True)

    return update
