"""Writing a file whole or not at all, for every layer that writes one a reader may open at any
moment (a harness file, a run's manifest, a suite).

>>> import tempfile
>>> p = Path(tempfile.mkdtemp()) / "x.json"
>>> atomic_write(p, "{}"); p.read_text()
'{}'
>>> atomic_write(p, b"[]"); p.read_bytes(), sorted(q.name for q in p.parent.iterdir())
(b'[]', ['x.json'])
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one step: a temporary file
    beside it, flushed to disk, then renamed over it. A reader sees the old file or the new one,
    never half of one; a kill or a full disk leaves the old file and no temporary one. The file
    keeps its permissions (a new one is 0644)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = path.stat().st_mode & 0o777 if path.is_file() and not path.is_symlink() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["atomic_write"]
