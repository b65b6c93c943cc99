"""Tool lists in the two formats other tools speak: MCP ``tools/list`` results and OpenAI tools.

- **MCP**: ``{"tools": [{"name", "title"?, "description"?, "inputSchema", "outputSchema"?,
  "annotations"?}]}`` — also as the whole JSON-RPC response (``{"result": {"tools": [...]}}``)
  or the bare list;
- **OpenAI**: ``[{"type": "function", "function": {"name", "description", "parameters", "strict"?}}]``
  — also under ``{"tools": [...]}`` or in the Responses API's flat form (``{"type": "function", "name", ...}``).

The format is detected from the entries. Schemas stay JSON Schema and are checked as the
harness checks a tool's ``parameters`` (the metaschema, unknown keywords, ``$ref`` that must
resolve inside the schema — a harness never fetches one).

>>> fmt, specs = read_tool_list("mcp_tools.json")            # doctest: +SKIP
>>> fmt, specs[0].name                                        # doctest: +SKIP
('mcp', 'get_coupons')
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from .errors import HarnessError, Issue
from .model import Tool
from .validate import parameter_issues

MCP, OPENAI = "mcp", "openai"
FORMATS = (MCP, OPENAI)
#: Largest tool list read.
MAX_TOOL_LIST_BYTES = 8 * 1024 * 1024
#: Tool fields each format carries besides name, description and the input schema.
MCP_EXTRA = ("title", "outputSchema", "annotations", "icons", "_meta")
OPENAI_EXTRA = ("strict",)

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")
_EMPTY_SCHEMA = {"type": "object", "properties": {}}


@dataclass
class ToolSpec:
    """One tool as a tool list defines it: its surface and JSON Schemas, nothing bound yet."""

    name: str
    description: str
    parameters: dict[str, Any]
    #: The format's other fields (MCP ``title``, ``outputSchema``, ``annotations``; OpenAI ``strict``).
    extra: dict[str, Any] = field(default_factory=dict)
    #: Where it is in the file, e.g. ``$.tools[2]``.
    where: str = ""


def read_tool_list(path: str | Path) -> tuple[str, list[ToolSpec]]:
    """The format (``mcp`` or ``openai``) and tools of the JSON file at ``path``; raise
    :class:`HarnessError` naming the file, the entry and the field of the first problem.

    >>> read_tool_list("tools.json")[0]                             # doctest: +SKIP
    'openai'
    """
    where = str(path)
    p = Path(path)
    if not p.is_file():
        raise HarnessError(Issue(where, "no such file" if not p.exists() else "not a file", hint="pass a JSON file"))
    if p.stat().st_size > MAX_TOOL_LIST_BYTES:
        raise HarnessError(Issue(where, f"is larger than {MAX_TOOL_LIST_BYTES // (1024 * 1024)} MiB"))
    data = _load_json(p.read_bytes(), where)
    return parse_tool_list(data, where)


def parse_tool_list(data: Any, where: str = "<tools>") -> tuple[str, list[ToolSpec]]:
    """The format and tools of an already-parsed tool list (see :func:`read_tool_list`).

    >>> parse_tool_list({"tools": [{"name": "ping", "description": "d", "inputSchema": {"type": "object"}}]})[0]
    'mcp'
    """
    entries, base = _entries(data, where)
    fmt = detect_format(entries, where, base)
    specs = [_spec(fmt, e, where, f"{base}[{i}]") for i, e in enumerate(entries)]
    seen: dict[str, str] = {}
    for s in specs:
        if s.name in seen:
            raise HarnessError(
                Issue(where, f"tool name {s.name!r} is defined twice ({seen[s.name]} and {s.where})", path=s.where)
            )
        seen[s.name] = s.where
    return fmt, specs


def detect_format(entries: list[Any], where: str = "<tools>", base: str = "$") -> str:
    """``mcp`` when the entries carry ``inputSchema``, ``openai`` when they are ``type: function``."""
    kinds = set()
    for e in entries:
        if isinstance(e, dict):
            if e.get("type") == "function" or "function" in e:
                kinds.add(OPENAI)
            elif "inputSchema" in e:
                kinds.add(MCP)
    if kinds == {MCP} or kinds == {OPENAI}:
        return kinds.pop()
    if not kinds and entries and all(isinstance(e, dict) and "name" in e for e in entries):
        return MCP  # MCP entries that all lack inputSchema: reported as such, entry by entry
    if len(kinds) > 1:
        message = "mixes MCP tools (inputSchema) and OpenAI tools (type: function)"
    else:
        message = "holds no tool this reader recognises"
    raise HarnessError(
        Issue(
            where,
            message,
            path=base,
            hint='give an MCP tools/list result {"tools": [{"name", "description", "inputSchema"}]} '
            'or an OpenAI list [{"type": "function", "function": {"name", "description", "parameters"}}]',
        )
    )


def _load_json(raw: bytes, where: str) -> Any:
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key {k!r}")
            out[k] = v
        return out

    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise HarnessError(Issue(where, f"not UTF-8 text (byte {e.start})", hint="save the file as UTF-8")) from None
    try:
        return json.loads(text, parse_constant=no_constant, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as e:
        raise HarnessError(Issue(where, f"invalid JSON: {e.msg}", e.lineno, e.colno)) from None
    except ValueError as e:
        raise HarnessError(Issue(where, f"invalid JSON: {e}")) from None
    except RecursionError:
        raise HarnessError(Issue(where, "JSON nested too deeply")) from None


def _entries(data: Any, where: str) -> tuple[list[Any], str]:
    base = "$"
    if isinstance(data, dict) and "result" in data and isinstance(data["result"], dict):
        data, base = data["result"], "$.result"  # a whole JSON-RPC response
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        return data["tools"], f"{base}.tools"
    if isinstance(data, list):
        return data, base
    raise HarnessError(
        Issue(where, "expected a list of tools, or an object with a tools list", path=base, hint="see docs/harness.md")
    )


def _spec(fmt: str, entry: Any, where: str, at: str) -> ToolSpec:
    if not isinstance(entry, dict):
        raise HarnessError(Issue(where, "a tool entry must be an object", path=at))
    if fmt == OPENAI:
        if entry.get("type") != "function":
            raise HarnessError(Issue(where, 'not a function tool: type must be "function"', path=f"{at}.type"))
        fn, fn_at = (entry["function"], f"{at}.function") if "function" in entry else (entry, at)
        if not isinstance(fn, dict):
            raise HarnessError(Issue(where, "function: expected an object", path=f"{at}.function"))
        name = _name(fn, where, fn_at)
        schema = fn.get("parameters", copy.deepcopy(_EMPTY_SCHEMA))  # OpenAI: no parameters = no arguments
        schema_at = f"{fn_at}.parameters"
        extra = {k: copy.deepcopy(fn[k]) for k in OPENAI_EXTRA if k in fn}
        description = fn.get("description")
    else:
        name = _name(entry, where, at)
        if "inputSchema" not in entry:
            raise HarnessError(
                Issue(
                    where,
                    f"tool {name!r}: missing inputSchema",
                    path=f"{at}.inputSchema",
                    hint='an MCP tool needs an inputSchema; a tool without arguments has {"type": "object"}',
                )
            )
        schema, schema_at = entry["inputSchema"], f"{at}.inputSchema"
        extra = {k: copy.deepcopy(entry[k]) for k in MCP_EXTRA if k in entry}
        description = entry.get("description") or entry.get("title")
        if "outputSchema" in entry:
            _check_schema(entry["outputSchema"], where, f"{at}.outputSchema", name)
    if not isinstance(description, str) or not description.strip():
        raise HarnessError(
            Issue(
                where,
                f"tool {name!r}: no description",
                path=f"{at}.description",
                hint="the model reads the description to choose the tool; add one",
            )
        )
    if not isinstance(schema, dict):
        raise HarnessError(Issue(where, f"tool {name!r}: the input schema must be an object", path=schema_at))
    if schema.get("type") != "object":
        raise HarnessError(
            Issue(
                where,
                f'tool {name!r}: the input schema\'s type must be "object"',
                path=f"{schema_at}.type",
                hint='tool arguments are always an object: add `"type": "object"`',
            )
        )
    _check_parameters(schema, where, schema_at, name)
    return ToolSpec(name, description, copy.deepcopy(schema), extra, at)


def _name(entry: dict[str, Any], where: str, at: str) -> str:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise HarnessError(Issue(where, "a tool without a name", path=f"{at}.name", hint='add "name"'))
    if not _NAME_RE.match(name):
        raise HarnessError(
            Issue(
                where,
                f"tool name {name!r} is not a valid harness tool name",
                path=f"{at}.name",
                hint="a letter, then letters, digits, _ or -, at most 64 characters (what OpenAI accepts)",
            )
        )
    return name


def _check_parameters(schema: dict[str, Any], where: str, at: str, name: str) -> None:
    issues = parameter_issues(where, {"parameters": schema})
    if issues:
        first = issues[0]
        path = at + first.path.removeprefix("$.parameters")
        raise HarnessError(Issue(where, f"tool {name!r}: {first.message}", path=path, hint=first.hint))
    _check_finite(schema, where, at, name)


def _check_schema(schema: Any, where: str, at: str, name: str) -> None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        raise HarnessError(Issue(where, f"tool {name!r}: not a JSON Schema: {e.message}", path=at)) from None


def _check_finite(value: Any, where: str, at: str, name: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise HarnessError(Issue(where, f"tool {name!r}: a number that is not finite", path=at))
    if isinstance(value, dict):
        for v in value.values():
            _check_finite(v, where, at, name)
    elif isinstance(value, list):
        for v in value:
            _check_finite(v, where, at, name)


def tool_key(name: str) -> str:
    """The key a tool named ``name`` gets: ``getCoupons`` / ``get-coupons`` -> ``get_coupons``.

    >>> tool_key("getCouponCodes")
    'get_coupon_codes'
    """
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    key = re.sub(r"[^a-z0-9]+", "_", snake).strip("_")[:64] or "tool"
    return key if key[0].isalpha() else f"tool_{key}"[:64]


# -- export ------------------------------------------------------------------------------------


def tools_as(fmt: str, tools: list[Tool]) -> Any:
    """``tools`` in format ``fmt``: an MCP ``tools/list`` result or an OpenAI tools list.

    >>> tools_as("openai", h.tools)[0]["function"]["name"]          # doctest: +SKIP
    'track_order'
    """
    if fmt == MCP:
        out = []
        for t in tools:
            entry: dict[str, Any] = {"name": t.name}
            if "title" in t.extra:
                entry["title"] = t.extra["title"]
            entry["description"] = t.description
            entry["inputSchema"] = copy.deepcopy(t.parameters)
            entry.update({k: copy.deepcopy(v) for k, v in t.extra.items() if k in MCP_EXTRA and k != "title"})
            out.append(entry)
        return {"tools": out}
    if fmt == OPENAI:
        specs = []
        for t in tools:
            fn: dict[str, Any] = {
                "name": t.name,
                "description": t.description,
                "parameters": copy.deepcopy(t.parameters),
            }
            fn.update({k: copy.deepcopy(v) for k, v in t.extra.items() if k in OPENAI_EXTRA})
            specs.append({"type": "function", "function": fn})
        return specs
    raise ValueError(f"unknown tool format {fmt!r} (formats: {', '.join(FORMATS)})")


def merged_extra(fmt: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A re-imported tool's extra fields: those format ``fmt`` carries come from the import, the
    others stay (an OpenAI list cannot say an MCP tool's title, so re-importing it keeps it)."""
    carried = MCP_EXTRA if fmt == MCP else OPENAI_EXTRA
    out = {k: v for k, v in old.items() if k not in carried}
    out.update(new)
    return out
