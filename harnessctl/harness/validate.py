"""Validation of harness documents: JSON Schemas per file, then cross-file checks."""

from __future__ import annotations

from typing import Any

from .errors import Issue


def validate_documents(docs: dict[str, Any], root: str | None = None) -> list[Issue]:
    """Every problem found in the documents of one harness (empty when valid)."""
    return []
