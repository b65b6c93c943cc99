"""One output sink for every command: data to stdout (rich or JSON), diagnostics to stderr.

Exit codes on purpose: 0 ok, 1 a difference / regression / threshold missed, 2 bad usage or
bad input, 3 an evaluation whose cases ended in errors (more than it tolerates), 130 interrupted.
Known errors (:data:`EXIT_CODES`) become one clear message and their exit code, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

from harnessctl.errors import HarnessctlError, Interrupted
from harnessctl.harness.errors import HarnessError

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_BAD_INPUT = 2
EXIT_ERRORS = 3
EXIT_INTERRUPTED = 130


class CLIError(HarnessctlError):
    """A user-facing error: ``message`` says what went wrong and what to do."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.code = code


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    err.print(f"[bold red]error:[/] {message}", markup=True)
    raise typer.Exit(code)


#: The exit code of each exception a command reports as one message instead of a traceback; the
#: first row that matches wins. A :class:`CLIError` carries its own code; every other project error
#: derives from :class:`~harnessctl.errors.HarnessctlError`, an
#: :class:`~harnessctl.errors.Interrupted` (stopped by Ctrl-C, the work so far kept) among them. An ``OSError`` is the machine's answer
#: (a folder that cannot be written, a full disk) and names its path. A command whose library says
#: "bad input" with plain ``ValueError``/``LookupError`` names those types to :func:`cli_errors`.
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (KeyboardInterrupt, EXIT_INTERRUPTED),
    (Interrupted, EXIT_INTERRUPTED),
    (HarnessctlError, EXIT_BAD_INPUT),
    (OSError, EXIT_BAD_INPUT),
)


def exit_code(e: BaseException, bad_input: tuple[type[BaseException], ...] = ()) -> int | None:
    """The exit code :data:`EXIT_CODES` gives ``e`` (``bad_input`` types: bad input too), or None
    for an exception no row knows (a bug: it keeps its traceback).

    >>> exit_code(CLIError("no such run", code=1)), exit_code(ValueError("x")), exit_code(ValueError("x"), (ValueError,))
    (1, None, 2)
    """
    if isinstance(e, CLIError):
        return e.code
    rows = EXIT_CODES + tuple((t, EXIT_BAD_INPUT) for t in bad_input)
    return next((code for kind, code in rows if isinstance(e, kind)), None)


def error_message(e: BaseException, os_hint: str = "") -> str:
    """What a person reads for a known exception: its message; for an ``OSError`` the path and
    what went wrong (then ``os_hint``); for a ``KeyError`` its text without the quotes; for an
    :class:`~harnessctl.errors.Interrupted` what was kept, then what to do.

    >>> error_message(PermissionError(13, "Permission denied", "out/x")), error_message(KeyError("no product 'P9'"))
    ('out/x: permission denied: choose a folder you can write to', "no product 'P9'")
    """
    if isinstance(e, OSError) and not isinstance(e, HarnessctlError):
        what = (
            "permission denied: choose a folder you can write to"
            if isinstance(e, PermissionError)
            else (e.strerror or str(e))
        )
        return (f"{e.filename}: {what}" if e.filename is not None else what) + os_hint
    if isinstance(e, KeyError) and len(e.args) == 1:
        return str(e.args[0])
    if isinstance(e, Interrupted) and e.then:
        return f"{e}; {e.then}"
    return str(e)


@contextmanager
def cli_errors(*bad_input: type[Exception], os_hint: str = "") -> Iterator[None]:
    """Turn the exceptions of :data:`EXIT_CODES` (and ``bad_input``) into a message on stderr and
    their exit code; a harness's issues are listed one a line. ``os_hint`` follows the message of
    an ``OSError`` (e.g. which option names the path)."""
    try:
        yield
    except BaseException as e:
        code = exit_code(e, bad_input)
        if code is None:
            raise
        if isinstance(e, KeyboardInterrupt):
            err.print("[yellow]interrupted[/]")
            raise typer.Exit(code) from None
        if isinstance(e, Interrupted):
            err.print(f"[yellow]interrupted:[/] {_escape(error_message(e))}")
            raise typer.Exit(code) from None

        if isinstance(e, HarnessError):
            # the same "error:" lead as every other message; `validate` lists issues its own way
            for issue in e.issues:
                err.print(f"[bold red]error:[/] [red]{_escape(str(issue))}[/]")
            raise typer.Exit(code) from None
        fail(_escape(error_message(e, os_hint)), code)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
