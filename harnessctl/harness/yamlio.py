"""Safe YAML reading and writing for harness files (ruamel.yaml, round-trip mode).

A harness file is data: no tags that construct objects, no paths outside the harness folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from .errors import HarnessError, Issue

MAX_FILE_BYTES = 1_000_000


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 100
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def read_yaml_file(root: str | Path, rel: str) -> Any:
    """Read ``root/rel`` as one YAML mapping; raise :class:`HarnessError` naming the file."""
    root = Path(root)
    path = root / rel
    if not path.is_file():
        raise HarnessError(Issue(rel, "file is missing"))
    data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES:
        raise HarnessError(Issue(rel, f"file is larger than {MAX_FILE_BYTES} bytes"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HarnessError(Issue(rel, f"not UTF-8 text (byte {e.start})", hint="save the file as UTF-8"))
    try:
        doc = _yaml().load(text)
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise HarnessError(
            Issue(rel, f"invalid YAML: {e.problem or e.context}", line=mark.line + 1 if mark else None, col=mark.column + 1 if mark else None)
        )
    except YAMLError as e:
        raise HarnessError(Issue(rel, f"invalid YAML: {e}"))
    if doc is None:
        raise HarnessError(Issue(rel, "file is empty", hint="a harness file holds one mapping"))
    if not isinstance(doc, dict):
        raise HarnessError(Issue(rel, f"expected a mapping at the top, found a {type(doc).__name__}", line=1, col=1))
    return doc


def dump_yaml(doc: Any) -> str:
    import io

    buf = io.StringIO()
    _yaml().dump(doc, buf)
    return buf.getvalue()
