"""Long work reports progress on stderr: a live bar on a terminal, a line per tenth in a log file,
nothing when turned off (``--json`` into a pipe)."""

from __future__ import annotations

import io

from rich.console import Console

from harnessctl.progress import prefixed, progress_bars


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


def test_a_slow_task_in_a_log_file_is_heard_from_every_half_minute_with_its_rate_and_time_left(monkeypatch):
    # 1,600 cases at one per 11 s: the first tenth would take five hours; the log hears sooner
    clock = [1000.0]
    monkeypatch.setattr("harnessctl.progress.time.perf_counter", lambda: clock[0])
    log = Console(file=io.StringIO())
    with progress_bars("eval", console=log) as update:
        update("variant", 0, 1600)
        for done in range(1, 20):
            clock[0] += 11.0
            update("variant", done, 1600)
    lines = log.file.getvalue().splitlines()
    assert lines[0] == "variant 3/1600 (33 s, 5.5/min, about 4 h 52 min left)"
    assert len(lines) == 6 and lines[-1].startswith("variant 18/1600 (3 min 18 s, 5.5/min")


def test_a_terminal_bar_shows_the_rate():
    screen = Console(file=io.StringIO(), force_terminal=True, width=120)
    with progress_bars("eval", console=screen) as update:
        update("livestream", 0, 4)
        update("livestream", 4, 4)
    assert "/s" in screen.file.getvalue() or "/min" in screen.file.getvalue()


def test_work_done_again_over_the_same_suites_is_counted_under_names_of_its_own():
    # a loop's candidates and a gate's two runs each go over the same suites: each gets its lines
    log = Console(file=io.StringIO())
    with progress_bars("loop", console=log) as update:
        for run in ("baseline", "c1-slice"):
            named = prefixed(update, run)
            for done in range(0, 5):
                named("livestream", done, 4)
    lines = [line.split(" (")[0] for line in log.file.getvalue().splitlines()]
    assert lines == [f"{run} livestream {n}/4" for run in ("baseline", "c1-slice") for n in range(1, 5)]
    assert prefixed(None, "baseline") is None


def test_loop_release_and_bench_bars_show_done_total_the_rate_and_the_time_left(monkeypatch):
    from harnessctl.cli import eval_cmds, loop_cmds

    for module, progress in ((eval_cmds, lambda: eval_cmds._progress("eval")), (loop_cmds, loop_cmds._progress)):
        screen = Console(file=io.StringIO(), force_terminal=True, width=120)
        monkeypatch.setattr(module, "err", screen)
        with progress() as update:
            update("candidate livestream", 0, 4)
            update("candidate livestream", 2, 4)
        shown = screen.file.getvalue()
        assert "candidate livestream" in shown and "2/4" in shown and "eta" in shown, module.__name__
        assert "/s" in shown or "/min" in shown
