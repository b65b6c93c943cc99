"""Reading JSON Lines files, one place for every reader: each line's number for its errors, and
a torn last line (a write cut short by a kill) told from damage.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
>>> _ = p.write_text('{"a": 1}\\n\\n{"a": 2}\\n{"a": 3, "b"', encoding="utf-8")
>>> [(n, row["a"]) for n, row in read_jsonl(p, torn_tail=True)]
[(1, 1), (3, 2)]
>>> list(read_jsonl(p, lambda where, e: ValueError(f"{where}: not valid JSON ({e.msg})")))
Traceback (most recent call last):
...
ValueError: ...rows.jsonl:4: not valid JSON (Expecting ':' delimiter)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Builds the exception for a line that is not JSON: ``(where, error)`` with ``where`` as
#: ``path:line`` (the path as the caller gave it).
BadLine = Callable[[str, json.JSONDecodeError], Exception]


def _not_json(where: str, e: json.JSONDecodeError) -> Exception:
    return ValueError(f"{where}: not valid JSON ({e.msg})")


def read_jsonl(
    path: str | Path, bad_line: BadLine = _not_json, *, torn_tail: bool = False
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of ``path``, in order, from 1. Lines end
    at ``\\n`` only (a JSON string may hold any other line separator).

    A line that is not JSON, or not UTF-8 (reported as a :class:`json.JSONDecodeError` whose
    ``msg`` says so), raises ``bad_line(f"{path}:{n}", error)``. With ``torn_tail``, a last line
    that does not end in a newline and is not JSON is left out instead: a write cut short."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                shown = raw.decode("utf-8", errors="replace")
                raise json.JSONDecodeError(f"not UTF-8 text (byte 0x{raw[e.start]:02x})", shown, e.start) from None
            value = json.loads(text)
        except json.JSONDecodeError as e:
            if torn_tail and number == len(lines):  # the split leaves no last piece after a final newline
                return
            raise bad_line(f"{path}:{number}", e) from None
        yield number, value


__all__ = ["BadLine", "read_jsonl"]
