"""Long work reports progress on stderr: a live bar on a terminal, a line per tenth in a log file,
nothing when turned off (``--json`` into a pipe)."""

from __future__ import annotations

import io

from rich.console import Console

from harnessctl.progress import progress_bars


def test_a_log_file_gets_one_line_per_tenth_of_each_task():
    log = Console(file=io.StringIO())
    with progress_bars("eval", console=log) as update:
        for done in range(1, 201):
            update("livestream", done, 200)
        update("", 1, 1)  # a task without a name is shown under the label
    lines = [line.split(" (")[0] for line in log.file.getvalue().splitlines()]
    assert lines == [f"livestream {n}/200" for n in range(20, 201, 20)] + ["eval 1/1"]


def test_a_terminal_gets_a_bar_only_once_work_starts():
    screen = Console(file=io.StringIO(), force_terminal=True, width=100)
    with progress_bars("eval", console=screen):
        pass
    assert screen.file.getvalue() == ""  # refused before any work: no empty bar
    with progress_bars("eval", console=screen) as update:
        update("variant", 3, 3)
    assert "variant" in screen.file.getvalue() and "3/3" in screen.file.getvalue()


def test_turned_off_it_prints_nothing():
    log = Console(file=io.StringIO())
    with progress_bars("eval", enabled=False, console=log) as update:
        update("livestream", 1, 1)
    assert log.file.getvalue() == ""
