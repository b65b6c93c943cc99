"""One output sink for every command: data to stdout (rich or JSON), diagnostics to stderr.

Exit codes on purpose: 0 ok, 1 a difference / regression / threshold missed, 2 bad usage or
bad input, 3 an evaluation whose cases ended in errors (more than it tolerates), 130 interrupted.
Known library errors become a clear message and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_BAD_INPUT = 2
EXIT_ERRORS = 3
EXIT_INTERRUPTED = 130


class CLIError(Exception):
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


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn known library errors into a message on stderr and exit code 2 (no traceback)."""
    from harnessctl.harness.errors import HarnessError

    try:
        yield
    except HarnessError as e:
        # the same "error:" lead as every other message; `validate` lists issues its own way
        for issue in e.issues:
            err.print(f"[bold red]error:[/] [red]{_escape(str(issue))}[/]")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except CLIError as e:
        fail(_escape(str(e)), e.code)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except OSError as e:
        if e.filename is None:
            raise
        # A folder that cannot be written, a path that is a file, a full disk: name the path.
        what = (
            "permission denied: choose a folder you can write to"
            if isinstance(e, PermissionError)
            else (e.strerror or str(e))
        )
        fail(_escape(f"{e.filename}: {what}"))


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
