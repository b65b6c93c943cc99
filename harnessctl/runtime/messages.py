"""The messages of an episode: the viewer's comment in context, tool results, runtime notes.

Tool results are shown to the model as the harness's ``hooks.message`` says: ``json`` (compact
JSON) or ``text`` (one ``path: value`` line per leaf), after an optional prefix. Both forms read
back with :func:`parse_tool_content`, which is how the oracle reads results under any harness.

>>> from harnessctl.harness.model import MessageHook
>>> hook = MessageHook(tool_result_format="text", tool_result_prefix="Result:")
>>> text = format_tool_result({"id": "P001", "variants": [{"name": "M", "stock": 3}]}, hook)
>>> print(text)
Result:
id: P001
variants.0.name: M
variants.0.stock: 3
>>> parse_tool_content(text, hook)
{'id': 'P001', 'variants': [{'name': 'M', 'stock': 3}]}
"""

from __future__ import annotations

import json
import re
from typing import Any

from harnessctl.harness.model import MessageHook

#: ``name`` of the user-role messages the runtime itself writes (guard and parse feedback),
#: so that nothing mistakes them for the viewer.
RUNTIME_AUTHOR = "runtime"


def viewer_message(case: Any) -> dict[str, Any]:
    """The user message for a case: the stream context on one line, then the comment.

    >>> from harnessctl.sim.case import Case, CaseContext
    >>> c = Case(id="c", intent="price", query="how much is this one?",
    ...          context=CaseContext(product_id="P001", product_name="Glow Serum",
    ...                              viewer={"handle": "@lily_b", "region": "north"}))
    >>> print(viewer_message(c)["content"])
    [on screen: Glow Serum (P001) | viewer: @lily_b, north]
    how much is this one?
    """
    ctx = case.context
    parts = []
    if ctx.product_id:
        parts.append(
            f"on screen: {ctx.product_name} ({ctx.product_id})" if ctx.product_name else f"on screen: {ctx.product_id}"
        )
    lineup = getattr(ctx, "lineup", None) or {}
    if lineup:
        parts.append("earlier: " + ", ".join(f"{name} ({pid})" for pid, name in lineup.items()))
    viewer = ctx.viewer or {}
    who = ", ".join(str(viewer[k]) for k in ("handle", "region") if viewer.get(k))
    if who:
        parts.append(f"viewer: {who}")
    header = f"[{' | '.join(parts)}]\n" if parts else ""
    return {"role": "user", "content": header + case.query}


def history_messages(case: Any) -> list[dict[str, Any]]:
    """The case's earlier chat turns as chat messages (roles user/assistant only)."""
    out = []
    for turn in case.context.history or []:
        role = turn.get("role", "user")
        if role in ("user", "assistant") and turn.get("content"):
            out.append({"role": role, "content": str(turn["content"])})
    return out


def runtime_note(text: str) -> dict[str, Any]:
    """A message from the runtime to the model (guard feedback, unreadable tool calls)."""
    return {"role": "user", "name": RUNTIME_AUTHOR, "content": text}


def is_viewer_message(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and message.get("name") != RUNTIME_AUTHOR


def format_tool_result(result: Any, hook: MessageHook) -> str:
    """A tool result as the model sees it, per ``hooks.message``."""
    if hook.tool_result_format == "text":
        body = "\n".join(f"{path}: {_scalar_text(v)}" for path, v in _flatten(result, "")) or "(empty)"
        sep = "\n"
    else:
        body = json.dumps(result, ensure_ascii=False, separators=(", ", ": "))
        sep = " "
    prefix = (hook.tool_result_prefix or "").strip()
    return f"{prefix}{sep}{body}" if prefix else body


def format_tool_error(kind: str, message: str, hook: MessageHook) -> str:
    """A failed call as the model sees it: ``{"error": kind, "message": ...}`` in the result format."""
    return format_tool_result({"error": kind, "message": message}, hook)


def parse_tool_content(content: str, hook: MessageHook) -> Any:
    """Read a tool message back into data (inverse of :func:`format_tool_result`).

    Text that is neither form (a skill's rules, say) comes back as the string itself.
    """
    text = content or ""
    prefix = (hook.tool_result_prefix or "").strip()
    if prefix and text.startswith(prefix):
        text = text[len(prefix) :]
    text = text.strip()
    if hook.tool_result_format == "text":
        if text == "(empty)":
            return {}
        return _unflatten(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return _unflatten(text) if ": " in text else text


# -- text form -----------------------------------------------------------------------------


def _flatten(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        if not value:
            return [(path, {})] if path else []
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out += _flatten(v, f"{path}.{k}" if path else str(k))
        return out
    if isinstance(value, list):
        if not value:
            return [(path or "result", [])]
        out = []
        for i, v in enumerate(value):
            out += _flatten(v, f"{path}.{i}" if path else str(i))
        return out
    return [(path or "result", value)]


def _scalar_text(v: Any) -> str:
    if isinstance(v, str):
        # Strings that would read back as another type, or lose their edges or line breaks,
        # keep their JSON quotes (escaped to ASCII so that no character can break the line).
        if _looks_typed(v) or v != v.strip() or len(v.splitlines()) > 1 or "\n" in v:
            return json.dumps(v)
        return v
    return json.dumps(v, ensure_ascii=False)


_NUM_RE = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _looks_typed(s: str) -> bool:
    return s in ("true", "false", "null", "[]", "{}", "") or bool(_NUM_RE.match(s)) or s.startswith('"')


def _read_scalar(s: str) -> Any:
    if s.startswith('"') or s in ("true", "false", "null", "[]", "{}") or _NUM_RE.match(s):
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            return s
    return s


def _unflatten(text: str) -> Any:
    root: dict[str, Any] = {}
    for line in text.splitlines():
        path, sep, value = line.partition(": ")
        if not sep:
            path, sep, value = line.partition(":")
            if not sep:
                continue
        keys = path.strip().split(".")
        node: Any = root
        for k, _nxt in zip(keys, keys[1:]):
            child = node.get(k) if isinstance(node, dict) else None
            if child is None:
                child = {}
                node[k] = child
            node = child
        node[keys[-1]] = _read_scalar(value.strip())
    data = _lists(root)
    # A bare scalar or list result was written under the path "result".
    return data["result"] if isinstance(data, dict) and list(data) == ["result"] else data


def _lists(node: Any) -> Any:
    """Dicts whose keys are 0..n-1 were lists."""
    if not isinstance(node, dict):
        return node
    fixed = {k: _lists(v) for k, v in node.items()}
    if fixed and all(k.isdigit() for k in fixed) and sorted(int(k) for k in fixed) == list(range(len(fixed))):
        return [fixed[str(i)] for i in range(len(fixed))]
    return fixed
