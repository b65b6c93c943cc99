"""Safe YAML reading and writing for harness files (ruamel.yaml, round-trip mode).

A harness file is data. The reader refuses, with an :class:`Issue` naming the file (and the
line and column where there is one), anything that is not plain YAML data inside the folder:

- a path that is a symbolic link, or a folder on the way to it that is one (``skills -> /etc``),
  or a path that resolves outside the harness folder; something that is not a regular file;
- a file larger than :data:`MAX_FILE_BYTES`; binary content (NUL bytes), UTF-16, non-UTF-8;
- tabs in the indentation of a line;
- any explicit tag — ``!!python/object:...``, ``!include``, ``!custom`` and also the harmless
  ``!!str`` (quote the value instead): nothing is ever constructed from a tag;
- nesting deeper than :data:`MAX_DEPTH`, aliases that refer to themselves, and documents whose
  aliases expand to more than :data:`MAX_NODES` values ("billion laughs") — all detected while
  the parser streams events, before anything is built, so a bomb fails fast;
- duplicate mapping keys, keys that are not text, numbers that are not finite;
- an empty file, several documents in one file, or a top level that is not a mapping.

>>> doc = parse_yaml(b"key: greeting\\nname: greet_viewer\\n", "skills/greeting.yaml")
>>> doc["name"]
'greet_viewer'
"""

from __future__ import annotations

import codecs
import io
import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    ScalarEvent,
)
from ruamel.yaml.parser import Parser, RoundTripParser
from ruamel.yaml.reader import ReaderError

from .errors import HarnessError, Issue

#: Largest harness file the reader accepts (the shipped files are under 3 KiB; parsing is ~4 s/MiB).
MAX_FILE_BYTES = 256 * 1024
#: Deepest nesting of mappings and lists (the shipped harness needs 6).
MAX_DEPTH = 64
#: Most values a document may hold once every alias is expanded.
MAX_NODES = 100_000
#: Line width of written YAML: wide, so that a plain text is never re-wrapped (one edit, one line).
WRITE_WIDTH = 4096

_YAML_TAG_PREFIX = "tag:yaml.org,2002:"


class _Refused(Exception):
    """Raised from inside the parser when a document is not plain harness data."""

    def __init__(self, message: str, mark: Any = None, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.line = mark.line + 1 if mark is not None else None
        self.col = mark.column + 1 if mark is not None else None


class _EventGuard:
    """Checks every event the composer takes before it builds a node (mixed into a parser).

    Events are produced one at a time by the parser's state machine (no recursion), so depth,
    tags and alias expansion are checked before the recursive composer goes any deeper.
    """

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._open: list[list[Any]] = []  # [anchor, expanded size] per open mapping / list
        self._sizes: dict[str, int] = {}  # anchor -> expanded size of its node
        self._total = 0

    def get_event(self) -> Any:
        event = super().get_event()
        if isinstance(event, (ScalarEvent, CollectionStartEvent)) and event.ctag is not None:
            raise _refuse_tag(event.ctag, event.start_mark)
        if isinstance(event, CollectionStartEvent):
            if len(self._open) >= MAX_DEPTH:
                raise _Refused(
                    f"nesting deeper than {MAX_DEPTH} levels",
                    event.start_mark,
                    "harness files are shallow; flatten the structure",
                )
            self._add(1, event)
            self._open.append([event.anchor, 1])
        elif isinstance(event, CollectionEndEvent):
            anchor, size = self._open.pop()
            if anchor is not None:
                self._sizes[anchor] = size
            if self._open:  # the parent holds the whole subtree (already in the total)
                self._open[-1][1] += size - 1
        elif isinstance(event, ScalarEvent):
            if event.anchor is not None:
                self._sizes[event.anchor] = 1
            self._add(1, event)
        elif isinstance(event, AliasEvent):
            if any(anchor == event.anchor for anchor, _ in self._open):
                raise _Refused(
                    f"alias *{event.anchor} refers to a value that contains it",
                    event.start_mark,
                    "remove the alias; harness data cannot be recursive",
                )
            self._add(self._sizes.get(event.anchor, 1), event)
        return event

    def _add(self, n: int, event: Any) -> None:
        """Count ``n`` more values (an alias counts as the size of what it repeats)."""
        self._total += n
        if self._open:
            self._open[-1][1] += n
        if self._total > MAX_NODES:
            raise _Refused(
                f"document expands to more than {MAX_NODES:,} values (aliases counted at their expanded size)",
                event.start_mark,
                "a harness file holds far fewer values; remove aliases (*) that repeat large values",
            )


class _GuardedParser(_EventGuard, RoundTripParser):
    """The round-trip parser (comments and positions kept), guarded."""


class _GuardedDataParser(_EventGuard, Parser):
    """The plain parser (no comments: about a third faster), guarded the same way."""


def _refuse_tag(tag: Any, mark: Any) -> _Refused:
    text = str(getattr(tag, "value", None) or tag)
    if text.startswith(_YAML_TAG_PREFIX):
        text = "!!" + text[len(_YAML_TAG_PREFIX) :]
    if text.startswith("!!python"):
        hint = "harness files are data: Python objects are never built from them; remove the tag"
    elif text.startswith("!include") or text.startswith("!import"):
        hint = "harness files cannot include other files; put the content in the file itself"
    else:
        hint = "harness files use plain YAML without tags; remove it (quote the value if it must be text)"
    return _Refused(f"YAML tag {text} is not allowed", mark, hint)


def _yaml(*, reading: bool = False) -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = WRITE_WIDTH
    y.indent(mapping=2, sequence=4, offset=2)
    if reading:
        y.Parser = _GuardedParser
    return y


def read_yaml_file(root: str | Path, rel: str, *, round_trip: bool = True) -> dict[str, Any]:
    """Read ``root/rel`` as one YAML mapping; raise :class:`HarnessError` naming the file.

    ``round_trip=False`` gives plain data (see :func:`parse_yaml`).

    >>> read_yaml_file("harnesses/livecommerce", "tools/stock_check.yaml")["key"]   # doctest: +SKIP
    'stock_check'
    """
    data = read_harness_bytes(root, rel)
    return parse_yaml(data, rel) if round_trip else parse_yaml_data(data, rel)


def read_harness_bytes(root: str | Path, rel: str) -> bytes:
    """The bytes of the harness file ``rel`` under ``root``, refusing links and paths that leave it."""
    path = safe_harness_path(root, rel)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise HarnessError(Issue(rel, "file is missing")) from None
    except OSError as e:
        raise HarnessError(Issue(rel, f"cannot read the file: {e.strerror or e}")) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HarnessError(Issue(rel, "not a regular file", hint="a harness file is a plain YAML file"))
        if info.st_size > MAX_FILE_BYTES:
            raise HarnessError(_too_large(rel))
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise HarnessError(Issue(rel, f"cannot read the file: {e.strerror or e}")) from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise HarnessError(_too_large(rel))
    return data


def folder_issues(root: str | Path, folders: Iterable[str]) -> list[Issue]:
    """Problems with the harness subfolders (``skills``, ``tools``): a link, or not a folder."""
    root = Path(root)
    issues = []
    for name in folders:
        path = root / name
        if path.is_symlink():
            issues.append(
                Issue(
                    f"{name}/",
                    f"{name}/ is a symbolic link to {os.readlink(path)}",
                    hint=f"make {name}/ a real folder inside the harness folder",
                )
            )
        elif path.exists() and not path.is_dir():
            issues.append(
                Issue(name, f"{name} is a file, not a folder", hint=f"{name}/ holds one YAML file per element")
            )
    return issues


def safe_harness_path(root: str | Path, rel: str) -> Path:
    """``root/rel``, after checking that no part of it is a link and that it stays inside ``root``.

    Symbolic links are refused even when they point inside the folder: a harness is reviewed
    as the files git shows, and a link is a file whose content lives elsewhere.
    """
    root = Path(root)
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if not parts or PurePosixPath(rel).is_absolute() or any(p in ("..", "") for p in parts):
        raise HarnessError(
            Issue(rel, "path leaves the harness folder", hint="harness files live inside the harness folder")
        )
    current = root
    for i, part in enumerate(parts):
        current = current / part
        if current.is_symlink():
            where = "/".join(parts[: i + 1])
            target = os.readlink(current)
            try:
                current.resolve().relative_to(root.resolve())
                inside = True
            except (ValueError, OSError, RuntimeError):
                inside = False
            what = "file" if i == len(parts) - 1 else "folder"
            message = f"{where} is a symbolic link to {target}"
            message += "" if inside else " (outside the harness folder)"
            raise HarnessError(
                Issue(
                    rel,
                    message,
                    hint=f"harness files and folders must be real; replace the link with the {what} itself",
                )
            )
    try:
        current.resolve().relative_to(root.resolve())
    except ValueError:
        raise HarnessError(
            Issue(rel, "path leaves the harness folder", hint="harness files live inside the harness folder")
        ) from None
    except (OSError, RuntimeError) as e:
        raise HarnessError(Issue(rel, f"cannot resolve the path: {e}")) from None
    if current.is_dir():
        raise HarnessError(Issue(rel, "is a folder, not a file", hint="a harness file is a plain YAML file"))
    return current


def parse_yaml(data: bytes | str, rel: str) -> CommentedMap:
    """Parse the content of one harness file into a round-trip mapping (comments and order kept).

    Raises :class:`HarnessError` with one :class:`Issue` naming ``rel`` for anything that is not
    plain YAML data (see the module docstring).
    """
    text = _decode(data, rel)
    _check_indentation(text, rel)
    try:
        doc = _yaml(reading=True).load(text)
    except _Refused as e:
        raise HarnessError(Issue(rel, e.message, e.line, e.col, hint=e.hint)) from None
    except MarkedYAMLError as e:
        raise HarnessError(_yaml_issue(rel, e, text)) from None
    except ReaderError as e:
        line, col = _line_col(text, e.position)
        raise HarnessError(
            Issue(
                rel,
                f"control character {_char_name(e.character)} is not allowed",
                line,
                col,
                hint="remove it; harness files are plain text",
            )
        ) from None
    except (YAMLError, ValueError, TypeError, KeyError, IndexError, RecursionError, AssertionError) as e:
        # Anything else the YAML library raises on malformed input is still the file's fault.
        raise HarnessError(Issue(rel, f"invalid YAML: {type(e).__name__}: {e}")) from None
    if doc is None:
        raise HarnessError(Issue(rel, "file is empty", hint="a harness file holds one mapping (key: value lines)"))
    if not isinstance(doc, CommentedMap):
        found = "a list" if isinstance(doc, list) else f"a single value ({_short(doc)})"
        raise HarnessError(
            Issue(
                rel,
                f"expected a mapping (key: value lines) at the top, found {found}",
                1,
                1,
                "$",
                hint="see schemas/ for the fields this file takes",
            )
        )
    _check_values(doc, rel)
    return doc


def parse_yaml_data(data: bytes | str, rel: str) -> dict[str, Any]:
    """Like :func:`parse_yaml`, as plain dicts and lists without comments or positions: for
    reading only, about a third faster. The same checks apply (the same guarded events, the
    same text and value checks, duplicate keys refused); whenever anything is wrong the file is
    parsed again in round-trip mode, so the error raised is exactly :func:`parse_yaml`'s.

    >>> parse_yaml_data(b"key: greeting\\nname: greet_viewer\\n", "skills/greeting.yaml")
    {'key': 'greeting', 'name': 'greet_viewer'}
    """
    try:
        text = _decode(data, rel)
        _check_indentation(text, rel)
        y = YAML(typ="safe", pure=True)
        y.Parser = _GuardedDataParser
        doc = y.load(text)
        if not isinstance(doc, dict):
            raise TypeError("not a mapping")
        _check_values(doc, rel)
        return doc
    except Exception:  # any problem at all: the round-trip reader names it, with its position
        return parse_yaml(data, rel)


def dump_yaml(doc: Any) -> str:
    """Round-trip YAML text of ``doc`` (comments, order and quoting of loaded documents kept)."""
    buf = io.StringIO()
    _yaml().dump(doc, buf)
    return buf.getvalue()


# -- checks ------------------------------------------------------------------------------------


def _decode(data: bytes | str, rel: str) -> str:
    if isinstance(data, str):
        text = data
    else:
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
            raise HarnessError(Issue(rel, "file is UTF-16/UTF-32 text", 1, 1, hint="save it as UTF-8"))
        nul = data.find(b"\x00")
        if nul >= 0:
            line = data.count(b"\n", 0, nul) + 1
            col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
            raise HarnessError(
                Issue(
                    rel,
                    "binary content (a NUL byte), not a YAML text file",
                    line,
                    col,
                    hint="a harness file is UTF-8 text",
                )
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            raise HarnessError(
                Issue(rel, f"not UTF-8 text (byte 0x{data[e.start]:02x})", line, col, hint="save the file as UTF-8")
            ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        line, col = _line_col(text, text.index("\x00"))
        raise HarnessError(
            Issue(
                rel,
                "binary content (a NUL character), not a YAML text file",
                line,
                col,
                hint="a harness file is UTF-8 text",
            )
        )
    return text


def _check_indentation(text: str, rel: str) -> None:
    """Refuse tabs in the indentation of any line (YAML forbids them; editors hide them)."""
    if "\t" not in text:
        return
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip(" \t")
        indent = line[: len(line) - len(stripped)]
        if "\t" in indent:
            raise HarnessError(
                Issue(
                    rel,
                    "tab used for indentation",
                    number,
                    indent.index("\t") + 1,
                    hint="indent with spaces; YAML does not allow tabs there",
                )
            )


def _check_values(doc: CommentedMap, rel: str) -> None:
    """Refuse mapping keys that are not text and numbers that are not finite (JSON has neither)."""
    stack: list[tuple[Any, str]] = [(doc, "$")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    line, col = _lc(node, key, "key")
                    raise HarnessError(
                        Issue(rel, f"mapping key {_short(key)} is not text", line, col, path, hint=f'quote it: "{key}"')
                    )
                stack.append((value, f"{path}.{key}"))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise HarnessError(Issue(rel, f"{node} is not a finite number", path=path, hint="use a plain number"))


def _lc(node: Any, key: Any, what: str) -> tuple[int | None, int | None]:
    try:
        line, col = node.lc.key(key) if what == "key" else node.lc.value(key)
        return line + 1, col + 1
    except Exception:  # positions are best effort
        return None, None


def _yaml_issue(rel: str, e: MarkedYAMLError, text: str) -> Issue:
    mark = e.problem_mark or e.context_mark
    line = mark.line + 1 if mark is not None else None
    col = mark.column + 1 if mark is not None else None
    problem = (e.problem or e.context or "").strip()
    if problem.startswith("found duplicate key"):
        key = problem.split('"')[1] if '"' in problem else ""
        message = f"duplicate key '{key}'" if key else "duplicate key"
        first = _first_key_line(text, key, line, col) if key and line and col else None
        if first is not None:
            message += f" (first defined on line {first})"
        return Issue(rel, message, line, col, hint="a key may appear once per mapping; remove or rename one")
    if "found character '\\t'" in problem or "found character '\t'" in problem:
        return Issue(rel, "tab character where YAML does not allow one", line, col, hint="use spaces")
    if e.context and e.problem and e.context.strip() != problem:
        problem = f"{e.context.strip()}: {problem}"
    return Issue(
        rel, f"invalid YAML: {problem}", line, col, hint="check the indentation, colons and quotes on this line"
    )


def _first_key_line(text: str, key: str, line: int, col: int) -> int | None:
    """The line where ``key`` first appears in the block mapping whose keys start at ``col``."""
    lines = text.split("\n")
    for number in range(line - 1, 0, -1):
        current = lines[number - 1]
        if not current.strip() or current.lstrip().startswith("#"):
            continue
        head = current[: col - 1]
        if head.strip(" -") == "" and len(current) >= col and current[col - 1] != " ":
            # a line whose content starts at the mapping's column: one of its keys
            if current[col - 1 :].startswith((f"{key}:", f'"{key}":', f"'{key}':")):
                return number
            if "-" in head:
                return None  # the first line of the list item that holds the mapping
            continue
        if len(current) - len(current.lstrip(" ")) < col - 1:
            return None  # left the mapping
    return None


def _too_large(rel: str) -> Issue:
    return Issue(
        rel,
        f"file is larger than {MAX_FILE_BYTES:,} bytes",
        hint="a harness file is small text; split it or remove what does not belong",
    )


def _line_col(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _char_name(ch: Any) -> str:
    if isinstance(ch, int):
        return f"U+{ch:04X}"
    if isinstance(ch, str) and len(ch) == 1:
        return f"U+{ord(ch):04X}"
    return repr(ch)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
