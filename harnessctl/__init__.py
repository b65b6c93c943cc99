"""harnessctl: manage, evaluate and train LLM agents whose harness evolves every week."""

from __future__ import annotations

import importlib.metadata


def _version() -> str:
    try:
        return importlib.metadata.version("harnessctl")
    except importlib.metadata.PackageNotFoundError:  # a source tree that is not installed
        return "0+unknown"


__version__ = _version()
