"""`harnessctl import tools` / `export tools`: MCP `tools/list` results and OpenAI tools lists.

The format is detected; schemas stay JSON Schema (nested objects, `$ref` to `$defs`) and are
checked; an imported tool is unbound until it gets a backend, and `validate` says how to bind
it. Every bad list is refused with one line naming the file and the field, exit 2, nothing
written. A list exported in either format re-imports with an empty diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessctl.harness import load_harness

from .harness_support import REPO_ROOT, copy_harness, run_cli, sim_backends, snapshot  # noqa: F401

ADDRESS = {
    "type": "object",
    "properties": {
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "lines": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["zip"],
}
MCP_LIST = {
    "tools": [
        {
            "name": "quote_delivery",
            "title": "Quote delivery",
            "description": "estimate when an order to an address arrives",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "product_id": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "options": {
                        "type": "object",
                        "properties": {"express": {"type": "boolean"}, "gift": {"$ref": "#/$defs/gift"}},
                    },
                },
                "required": ["product_id", "address"],
                "$defs": {"address": ADDRESS, "gift": {"type": "object", "properties": {"note": {"type": "string"}}}},
            },
            "outputSchema": {"type": "object", "properties": {"days": {"type": "integer"}}},
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        },
        {"name": "ping_store", "description": "check the store answers", "inputSchema": {"type": "object"}},
    ]
}
OPENAI_LIST = [
    {
        "type": "function",
        "function": {
            "name": "reserveItem",
            "description": "hold a product for a viewer for ten minutes",
            "parameters": {
                "type": "object",
                "properties": {
                    "product_id": {"type": "string"},
                    "viewer": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                        },
                        "required": ["id"],
                    },
                },
                "required": ["product_id", "viewer"],
                "$defs": {"tag": {"type": "string", "enum": ["vip", "new"]}},
            },
            "strict": True,
        },
    }
]


@pytest.fixture
def shop(tmp_path, sim_backends):  # noqa: F811
    return copy_harness(tmp_path / "shop")


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def import_json(shop: Path, file: Path, *extra: str) -> dict:
    result = run_cli("import", "tools", str(file), "-H", str(shop), "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def refused(shop: Path, file: Path, *extra: str) -> str:
    before = snapshot(shop)
    result = run_cli("import", "tools", str(file), "-H", str(shop), *extra)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert snapshot(shop) == before
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- importing ---------------------------------------------------------------------------------


def test_an_mcp_list_with_nested_schemas_and_refs_imports_its_schemas_as_they_are(shop, tmp_path):
    out = import_json(shop, write_json(tmp_path / "mcp.json", MCP_LIST))
    assert out["format"] == "mcp"
    assert [(c["kind"], c["key"]) for c in out["diff"]["changes"]] == [
        ("added", "quote_delivery"),
        ("added", "ping_store"),
    ]
    assert out["unbound"] == ["quote_delivery", "ping_store"]
    tools = {t.key: t for t in load_harness(shop, validate=False).tools}
    assert tools["quote_delivery"].parameters == MCP_LIST["tools"][0]["inputSchema"]
    assert tools["quote_delivery"].extra["annotations"] == {"readOnlyHint": True, "openWorldHint": False}


def test_a_json_rpc_response_is_read_as_its_tools_list_result(shop, tmp_path):
    response = {"jsonrpc": "2.0", "id": 1, "result": MCP_LIST}
    assert import_json(shop, write_json(tmp_path / "rpc.json", response))["format"] == "mcp"


def test_an_openai_list_is_detected_and_its_camel_case_name_gets_a_snake_case_key(shop, tmp_path):
    out = import_json(shop, write_json(tmp_path / "openai.json", OPENAI_LIST))
    assert out["format"] == "openai"
    tool = load_harness(shop, validate=False).tool("reserve_item")
    assert (tool.name, tool.extra) == ("reserveItem", {"strict": True})


def test_unbound_tools_are_named_and_validate_says_how_to_bind_them(shop, tmp_path):
    result = run_cli("import", "tools", str(write_json(tmp_path / "mcp.json", MCP_LIST)), "-H", str(shop))
    assert result.exit_code == 0
    assert "2 tool(s) not bound to a backend: quote_delivery, ping_store" in result.stderr
    check = run_cli("validate", str(shop))
    assert check.exit_code == 2
    line = next(ln for ln in check.stdout.splitlines() if "quote_delivery.yaml" in ln)
    assert line.startswith(f"{shop}/tools/quote_delivery.yaml:1:1: missing required field 'backend' ($) — ")
    assert "add `backend:` naming a simulator backend (by key, e.g. sim.get_promotions)" in line
    assert "@register_backend in a module listed in HARNESSCTL_BACKEND_MODULES" in line
    assert "sim.estimate_shipping" in line


def test_bind_gives_a_tool_its_backend_and_the_harness_validates(shop, tmp_path):
    file = write_json(tmp_path / "mcp.json", MCP_LIST)
    out = import_json(
        shop, file, "--bind", "quote_delivery=sim.estimate_shipping", "--bind", "ping_store=sim.get_stock"
    )
    assert out["unbound"] == []
    assert run_cli("validate", str(shop)).exit_code == 0


def test_reimporting_a_tool_keeps_its_backend(shop, tmp_path):
    file = write_json(tmp_path / "mcp.json", MCP_LIST)
    import_json(shop, file, "--bind", "quote_delivery=sim.estimate_shipping", "--bind", "ping_store=sim.get_stock")
    again = import_json(shop, file)
    assert again["diff"]["changes"] == [] and again["unbound"] == []


# -- bad lists: one line, exit 2, nothing written ----------------------------------------------


def _mcp_with(**changes) -> dict:
    data = json.loads(json.dumps(MCP_LIST))
    data["tools"][0].update(changes)
    return {"tools": [{k: v for k, v in data["tools"][0].items() if v is not None}, data["tools"][1]]}


@pytest.mark.parametrize(
    ("what", "data", "expected"),
    [
        (
            "an MCP tool without inputSchema",
            _mcp_with(inputSchema=None),
            "tool 'quote_delivery': missing inputSchema ($.tools[0].inputSchema) — an MCP tool needs an inputSchema; "
            'a tool without arguments has {"type": "object"}',
        ),
        (
            "a $ref that does not resolve",
            _mcp_with(inputSchema={"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
            "tool 'quote_delivery': $ref '#/$defs/missing' does not resolve inside the parameters schema "
            "($.tools[0].inputSchema.properties.a.$ref) — define it under $defs in the same schema",
        ),
        (
            "a $ref to another server",
            _mcp_with(inputSchema={"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}),
            "tool 'quote_delivery': $ref 'https://example.com/a.json' points outside the harness "
            "($.tools[0].inputSchema.properties.a.$ref) — a harness never reaches outside its folder",
        ),
        (
            "a schema that is not JSON Schema",
            _mcp_with(inputSchema={"type": "object", "properties": {"a": {"type": "text"}}}),
            "tool 'quote_delivery': 'text' is not a JSON Schema type ($.tools[0].inputSchema.properties.a.type)",
        ),
        (
            "an input schema that is not an object schema",
            _mcp_with(inputSchema={"type": "string"}),
            "tool 'quote_delivery': the input schema's type must be \"object\" ($.tools[0].inputSchema.type)",
        ),
        (
            "a name with a dot",
            _mcp_with(name="store.quote"),
            "tool name 'store.quote' is not a valid harness tool name ($.tools[0].name) — a letter, then letters, "
            "digits, _ or -, at most 64 characters",
        ),
        (
            "a duplicate name",
            {"tools": [MCP_LIST["tools"][1], MCP_LIST["tools"][1]]},
            "tool name 'ping_store' is defined twice ($.tools[0] and $.tools[1]) ($.tools[1])",
        ),
        (
            "no description",
            {"tools": [{"name": "x", "inputSchema": {"type": "object"}}]},
            "tool 'x': no description ($.tools[0].description) — the model reads the description to choose the tool",
        ),
        (
            "mixed formats",
            {"tools": [MCP_LIST["tools"][1], OPENAI_LIST[0]]},
            "mixes MCP tools (inputSchema) and OpenAI tools (type: function) ($.tools)",
        ),
        (
            "an OpenAI entry that is not a function",
            [{"type": "function", "function": {"name": "a", "description": "d"}}, {"type": "code_interpreter"}],
            'not a function tool: type must be "function" ($[1].type)',
        ),
    ],
)
def test_a_bad_tool_list_is_refused_naming_the_file_and_field(shop, tmp_path, what, data, expected):
    file = write_json(tmp_path / "tools.json", data)
    line = refused(shop, file)
    assert line.startswith(f"error: {file}: "), line
    assert expected in line, line


def test_a_file_that_is_not_json_is_refused_with_its_line(shop, tmp_path):
    file = tmp_path / "tools.json"
    file.write_text('{"tools": [\n  {"name": "a",}\n]}\n', encoding="utf-8")
    assert refused(shop, file) == f"error: {file}:2:16: invalid JSON: Expecting property name enclosed in double quotes"


def test_bind_must_name_a_tool_of_the_file(shop, tmp_path):
    file = write_json(tmp_path / "mcp.json", MCP_LIST)
    line = refused(shop, file, "--bind", "nope=sim.get_stock")
    assert line == (
        f"error: {file}: --bind names tool 'nope', which the file does not define — its tools: ping_store, quote_delivery"
    )


def test_a_tool_named_like_the_skill_loader_is_refused(shop, tmp_path):
    file = write_json(
        tmp_path / "t.json", {"tools": [{"name": "load_skill", "description": "d", "inputSchema": {"type": "object"}}]}
    )
    line = refused(shop, file)
    assert "tool name 'load_skill' is the name of the skill loader" in line
    assert "nothing was written" in line


# -- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["mcp", "openai"])
def test_tools_exported_in_each_format_reimport_with_an_empty_diff(shop, tmp_path, fmt):
    import_json(shop, write_json(tmp_path / "mcp.json", MCP_LIST), "--bind", "quote_delivery=sim.estimate_shipping")
    import_json(shop, write_json(tmp_path / "openai.json", OPENAI_LIST))
    exported = tmp_path / f"exported.{fmt}.json"
    result = run_cli("export", "tools", "-H", str(shop), "--format", fmt, "--out", str(exported))
    assert result.exit_code == 0, result.output
    data = json.loads(exported.read_text(encoding="utf-8"))
    names = [t["name"] for t in data["tools"]] if fmt == "mcp" else [t["function"]["name"] for t in data]
    assert len(names) == 8 + 3 and "reserveItem" in names and "track_order" in names
    again = import_json(shop, exported)
    assert again["format"] == fmt
    assert again["diff"]["changes"] == [] and again["written"] == []


def test_export_mcp_gives_back_title_output_schema_and_annotations(shop, tmp_path):
    import_json(shop, write_json(tmp_path / "mcp.json", MCP_LIST))
    result = run_cli("export", "tools", "-H", str(shop), "--format", "mcp")
    assert result.exit_code == 0
    exported = {t["name"]: t for t in json.loads(result.stdout)["tools"]}
    assert exported["quote_delivery"] == MCP_LIST["tools"][0]


def test_an_exported_list_imports_into_a_fresh_harness_unbound(tmp_path, sim_backends):  # noqa: F811
    shop = copy_harness(tmp_path / "shop")
    exported = tmp_path / "openai.json"
    assert run_cli("export", "tools", "-H", str(shop), "--format", "openai", "--out", str(exported)).exit_code == 0
    fresh = tmp_path / "fresh"
    assert run_cli("init", str(fresh)).exit_code == 0
    starter = {t.name for t in load_harness(fresh).tools}
    out = import_json(fresh, exported)
    shipped = {t["function"]["name"] for t in json.loads(exported.read_text(encoding="utf-8"))}
    assert set(out["unbound"]) == shipped - starter  # a tool the starter has keeps its backend
    assert out["unbound"]


def test_unknown_export_format_is_refused(shop):
    result = run_cli("export", "tools", "-H", str(shop), "--format", "yaml")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {shop}: unknown tool format 'yaml' — formats: mcp, openai"


def test_worked_example_files_are_real_shaped():
    fmt_file = REPO_ROOT / "examples" / "interchange" / "tools.mcp.json"
    assert json.loads(fmt_file.read_text(encoding="utf-8"))["tools"][0]["inputSchema"]["$defs"]
