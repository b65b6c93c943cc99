"""Tool calls written as text: Qwen/Hermes-style ``<tool_call>{json}</tool_call>`` blocks.

Small models, and servers without a tool-call parser, return tool calls inside the message text
instead of the OpenAI ``tool_calls`` field. :func:`parse_tool_calls` reads them back;
:func:`format_tool_call` writes one (the tiny model's chat template and the dataset writers use
the same form, so what a model is trained on is exactly what is parsed here).

>>> content, calls, errors = parse_tool_calls(
...     'Let me check.<tool_call>{"name": "check_stock", "arguments": {"product_id": "P012"}}</tool_call>')
>>> content, calls[0].name, calls[0].arguments, errors
('Let me check.', 'check_stock', {'product_id': 'P012'}, [])
>>> format_tool_call(calls[0])
'<tool_call>{"name": "check_stock", "arguments": {"product_id": "P012"}}</tool_call>'

Decisions (the runtime and the scorer rely on them):

- ``<think>...</think>`` stays in ``content`` untouched (the scorer measures reasoning length
  there); ``<tool_call>`` blocks *inside* a think block are deliberation, not actions, and are
  neither parsed nor removed.
- A block that is not valid JSON is an entry in ``errors``, never an exception. When the tool
  name can still be read, the call is kept with ``arguments=None`` and its text in
  ``raw_arguments``, so the runtime can answer with its invalid-call feedback.
- ``arguments`` may be an object or a JSON string holding an object (both occur in the wild);
  ``parameters`` is accepted as a synonym.
- An unterminated ``<tool_call>`` (generation stopped at the closing tag or ran out of tokens)
  is a call when the rest of the text is a complete JSON object, otherwise an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from harnessctl.models.types import ToolCall

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

_NAME_RE = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGS_RE = re.compile(r'"(?:arguments|parameters)"\s*:\s*(.*?)\s*\}?\s*$', re.S)


def parse_tool_calls(text: str | None) -> tuple[str, list[ToolCall], list[str]]:
    """Split model text into ``(content, calls, errors)``.

    ``content`` is the text with every tool-call block removed and surrounding whitespace
    stripped; ``calls`` are in order of appearance; ``errors`` describe malformed blocks
    (1-based block numbers).

    >>> parse_tool_calls('<tool_call>{"name": "x", "arguments": {oops}</tool_call>')[2]
    ['tool call 1: arguments are not valid JSON (Expecting property name enclosed in double quotes)']
    """
    if not text:
        return "", [], []
    calls: list[ToolCall] = []
    errors: list[str] = []
    kept: list[str] = []
    pos = 0
    for start, end in _think_spans(text):
        _scan(text[pos:start], kept, calls, errors)
        kept.append(text[start:end])
        pos = end
    _scan(text[pos:], kept, calls, errors)
    content = _tidy("".join(kept))
    return content, calls, errors


def format_tool_call(call: ToolCall | Mapping[str, Any]) -> str:
    """One ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` block (no newlines).

    Accepts a :class:`ToolCall` or an OpenAI ``tool_calls`` item (``{"function": {"name",
    "arguments"}}``, arguments as an object or a JSON string). Unparsable arguments are written
    back as their raw text, so a malformed call round-trips unchanged.

    >>> format_tool_call({"type": "function", "function": {"name": "a", "arguments": '{"k": 1}'}})
    '<tool_call>{"name": "a", "arguments": {"k": 1}}</tool_call>'
    """
    name, arguments, raw = _call_parts(call)
    if arguments is None:
        body = '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": ' + (raw or "null") + "}"
    else:
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{OPEN_TAG}{body}{CLOSE_TAG}"


def split_think(text: str) -> tuple[str, str]:
    """``(reasoning, rest)``: the text of the ``<think>`` blocks and the text outside them.

    >>> split_think("<think>price first</think>It is $9.")
    ('price first', 'It is $9.')
    """
    inner: list[str] = []
    outer: list[str] = []
    pos = 0
    for start, end in _think_spans(text):
        outer.append(text[pos:start])
        body = text[start + len(THINK_OPEN) : end]
        inner.append(body[: -len(THINK_CLOSE)] if body.endswith(THINK_CLOSE) else body)
        pos = end
    outer.append(text[pos:])
    return "\n".join(s.strip() for s in inner).strip(), _tidy("".join(outer))


# -- internals -----------------------------------------------------------------------------


def _think_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``<think>...</think>`` blocks; an unclosed one runs to the end of the text."""
    spans = []
    pos = 0
    while (start := text.find(THINK_OPEN, pos)) != -1:
        close = text.find(THINK_CLOSE, start + len(THINK_OPEN))
        end = len(text) if close == -1 else close + len(THINK_CLOSE)
        spans.append((start, end))
        pos = end
    return spans


def _scan(segment: str, kept: list[str], calls: list[ToolCall], errors: list[str]) -> None:
    pos = 0
    while True:
        start = segment.find(OPEN_TAG, pos)
        stray = segment.find(CLOSE_TAG, pos)
        if stray != -1 and (start == -1 or stray < start):
            # A closing tag with no opening one: drop it from the reply, say so.
            kept.append(segment[pos:stray])
            errors.append(f"tool call {len(calls) + len(errors) + 1}: stray {CLOSE_TAG} without {OPEN_TAG}")
            pos = stray + len(CLOSE_TAG)
            continue
        if start == -1:
            kept.append(segment[pos:])
            return
        kept.append(segment[pos:start])
        body_start = start + len(OPEN_TAG)
        end = segment.find(CLOSE_TAG, body_start)
        number = len(calls) + len(errors) + 1
        if end == -1:
            _read_block(segment[body_start:], number, calls, errors, unterminated=True)
            return
        _read_block(segment[body_start:end], number, calls, errors, unterminated=False)
        pos = end + len(CLOSE_TAG)


def _read_block(body: str, number: int, calls: list[ToolCall], errors: list[str], *, unterminated: bool) -> None:
    where = f"tool call {number}"
    text = body.strip()
    if not text:
        errors.append(f"{where}: empty {OPEN_TAG} block" + (" (unterminated)" if unterminated else ""))
        return
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        name_match = _NAME_RE.search(text)
        if unterminated:
            errors.append(f"{where}: unterminated {OPEN_TAG} (no {CLOSE_TAG}) and not valid JSON ({e.msg})")
        elif name_match:
            errors.append(f"{where}: arguments are not valid JSON ({e.msg})")
        else:
            errors.append(f"{where}: not valid JSON ({e.msg})")
        if name_match:
            args_match = _ARGS_RE.search(text, name_match.end()) or _ARGS_RE.search(text)
            raw = args_match.group(1) if args_match else text
            calls.append(ToolCall(name=_unescape(name_match.group(1)), arguments=None, raw_arguments=raw))
        return
    if not isinstance(obj, dict):
        errors.append(f"{where}: expected a JSON object with name and arguments, got {type(obj).__name__}")
        return
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        errors.append(f"{where}: missing tool name")
        return
    args_value = obj.get("arguments", obj.get("parameters", {}))
    arguments, raw, problem = _coerce_arguments(args_value)
    if problem:
        errors.append(f"{where} ({name}): {problem}")
    calls.append(ToolCall(name=name, arguments=arguments, raw_arguments=raw))


def _coerce_arguments(value: Any) -> tuple[dict[str, Any] | None, str, str | None]:
    """(arguments, raw text, problem) for an ``arguments`` value: an object or a JSON string."""
    if value is None:
        return {}, "{}", None
    if isinstance(value, dict):
        return value, json.dumps(value, ensure_ascii=False), None
    if isinstance(value, str):
        if not value.strip():
            return {}, value, None
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as e:
            return None, value, f"arguments are not valid JSON ({e.msg})"
        if isinstance(parsed, dict):
            return parsed, value, None
        return None, value, f"arguments must be a JSON object, got {type(parsed).__name__}"
    return None, json.dumps(value, ensure_ascii=False), f"arguments must be a JSON object, got {type(value).__name__}"


def _call_parts(call: ToolCall | Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, str]:
    if isinstance(call, ToolCall):
        return call.name, call.arguments, call.raw_arguments
    fn = call.get("function", call)
    name = str(fn.get("name", ""))
    arguments, raw, _ = _coerce_arguments(fn.get("arguments", {}))
    return name, arguments, raw


def _unescape(s: str) -> str:
    try:
        return json.loads(f'"{s}"')
    except json.JSONDecodeError:
        return s


def _tidy(text: str) -> str:
    # Removing blocks leaves blank runs behind; collapse them so the reply reads as written.
    return re.sub(r"\n{3,}", "\n\n", text).strip()
