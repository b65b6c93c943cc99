"""Moved to :mod:`harnessctl.models.toolcall_text` (how a model writes a tool call is the model
layer's business); this name stays so existing imports keep working."""

from harnessctl.models.toolcall_text import (  # noqa: F401
    CLOSE_TAG,
    OPEN_TAG,
    THINK_CLOSE,
    THINK_OPEN,
    format_tool_call,
    parse_tool_calls,
    split_think,
)
