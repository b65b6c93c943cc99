"""Validation: JSON Schemas per file, checks across files, and the tool-backend registry."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from harnessctl.harness import HarnessError, load_harness
from harnessctl.harness.backends import (
    BACKEND_MODULES_ENV,
    backends_registered,
    get_backend,
    known_backends,
    register_backend,
)
from harnessctl.harness.check import check_harness_dir, validate_harness_dir
from harnessctl.harness.loader import read_documents
from harnessctl.harness.model import (
    RETRY_TRIGGERS,
    Constraint,
    Guard,
    Harness,
    MessageHook,
    RetryHook,
    Skill,
    Tool,
)
from harnessctl.harness.validate import (
    PATTERN_HINTS,
    SCHEMA_DIR,
    load_schema,
    validate_documents,
)

from .harness_support import LIVECOMMERCE, REPO_ROOT, copy_harness, edit, sim_backends  # noqa: F401

SCHEMAS = ("harness", "prompt", "skill", "tool", "hooks")


# -- the schemas -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMAS)
def test_each_schema_is_a_valid_2020_12_schema_with_descriptions(name):
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["description"]
    assert (SCHEMA_DIR / f"{name}.schema.json").is_file()


def _object_schemas(node, path=()):
    if isinstance(node, dict):
        if "properties" in node and node.get("type") == "object":
            yield path, node
        for k, v in node.items():
            yield from _object_schemas(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _object_schemas(v, (*path, i))


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_mapping_an_author_writes_forbids_unknown_fields(name):
    for path, node in _object_schemas(load_schema(name)):
        if path == ("properties", "parameters"):
            continue  # a tool's parameters is a JSON Schema itself: checked by the metaschema
        assert node.get("additionalProperties") is False, (name, path)


def test_schemas_match_the_data_model_field_for_field():
    def fields(cls, *drop):
        return {f.name for f in dataclasses.fields(cls)} - set(drop)

    props = lambda name, *path: set(_dig(load_schema(name), path)["properties"])  # noqa: E731
    assert props("skill") == fields(Skill)
    assert props("tool") == fields(Tool)
    assert props("hooks", "properties", "retry") == fields(RetryHook)
    assert props("hooks", "properties", "message") == fields(MessageHook)
    assert props("hooks", "$defs", "guard") == fields(Guard)
    assert props("prompt", "properties", "constraints", "additionalProperties") == fields(Constraint, "key")
    # `order` is file layout (the order of skills and tools), held by the lists themselves
    assert props("harness") - {"order"} == fields(Harness, "prompt", "skills", "tools", "hooks", "root", "sources")
    retry_on = _dig(load_schema("hooks"), ("properties", "retry", "properties", "on", "items", "enum"))
    assert tuple(retry_on) == RETRY_TRIGGERS


def test_every_pattern_in_the_schemas_has_a_plain_words_hint():
    def patterns(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                yield node["pattern"]
            for v in node.values():
                yield from patterns(v)
        elif isinstance(node, list):
            for v in node:
                yield from patterns(v)

    for name in SCHEMAS:
        for p in patterns(load_schema(name)):
            assert p in PATTERN_HINTS, (name, p)


def test_every_shipped_file_validates_against_its_schema_as_plain_json():
    docs = read_documents(LIVECOMMERCE)
    for rel, doc in docs.items():
        name = "skill" if rel.startswith("skills/") else "tool" if rel.startswith("tools/") else rel.split(".")[0]
        plain = json.loads(json.dumps(doc))
        assert list(Draft202012Validator(load_schema(name)).iter_errors(plain)) == [], rel


def _dig(node, path):
    for p in path:
        node = node[p]
    return node


# -- the shipped harness -----------------------------------------------------------------------


def test_the_shipped_harness_is_valid_against_the_simulator_backends(sim_backends):
    check = check_harness_dir(LIVECOMMERCE)
    assert check.issues == []
    assert check.ok and check.harness is not None
    assert (len(check.harness.skills), len(check.harness.tools)) == (11, 8)
    assert load_harness(LIVECOMMERCE).name == "livecommerce"


# -- every problem, with file, line, column, JSON path and hint --------------------------------

CASES = [
    # (what, file, old, new, expected issue: (line, message, json path, hint fragment))
    (
        "misspelt field",
        "skills/greeting.yaml",
        "description:",
        "descripton:",
        (3, "unknown field 'descripton'", "$.descripton", "did you mean 'description'?"),
    ),
    (
        "wrong type",
        "hooks.yaml",
        "max_attempts: 2",
        "max_attempts: two",
        (3, "max_attempts: expected a whole number, found the text 'two'", "$.retry.max_attempts", ""),
    ),
    (
        "key not lower_snake_case",
        "prompt.yaml",
        "key: persona",
        "key: Persona",
        (4, "key: 'Persona' is not a valid key", "$.blocks[0].key", "lower_snake_case"),
    ),
    (
        "name not tool-call safe",
        "tools/promotions.yaml",
        "name: get_promotions",
        "name: get promotions",
        (2, "name: 'get promotions' is not a valid name", "$.name", "tool-call safe"),
    ),
    (
        "missing required field",
        "tools/promotions.yaml",
        "backend: sim.get_promotions\n",
        "",
        (1, "missing required field 'backend'", "$", "add `backend:`"),
    ),
    (
        "version that YAML reads as a number",
        "harness.yaml",
        "version: v3",
        "version: 3",
        (4, "version: expected text, found the number 3", "$.version", 'quote it: "3"'),
    ),
    (
        "duplicate block key",
        "prompt.yaml",
        "key: grounding",
        "key: persona",
        (8, "duplicate block key 'persona' (also blocks[0])", "$.blocks[1].key", "give this one its own key"),
    ),
    (
        "duplicate rule key",
        "skills/greeting.yaml",
        "key: no_facts",
        "key: use_name",
        (9, "duplicate rule key 'use_name' (also rules[0])", "$.rules[2].key", ""),
    ),
    (
        "constraint value outside its range",
        "prompt.yaml",
        "value: 120",
        "value: 250",
        (
            30,
            "max_reply_chars: value 250 is outside its range [60, 200]",
            "$.constraints.max_reply_chars.value",
            "widen min/max",
        ),
    ),
    (
        "constraint min above max",
        "prompt.yaml",
        "    min: 1\n",
        "    min: 9\n",
        (36, "max_tool_calls: min 9 is greater than max 8", "$.constraints.max_tool_calls.min", ""),
    ),
    (
        "skill lists an unknown tool key",
        "skills/complaint.yaml",
        "tools: [order_status, human_handoff]",
        "tools: [order_statu, human_handoff]",
        (11, "unknown tool key 'order_statu'", "$.tools[0]", "did you mean 'order_status'?"),
    ),
    (
        "skill lists a tool by its name instead of its key",
        "skills/complaint.yaml",
        "tools: [order_status, human_handoff]",
        "tools: [order_status, transfer_to_human]",
        (11, "unknown tool key 'transfer_to_human'", "$.tools[1]", "is the name of tool 'human_handoff'"),
    ),
    (
        "undefined template variable",
        "prompt.yaml",
        "{{ brand }}",
        "{{ brnd }}",
        (5, "undefined template variable {{ brnd }}", "$.blocks[0].text", "did you mean 'brand'?"),
    ),
    (
        "template names a tool by its surface name",
        "skills/order_help.yaml",
        "{{ tool.order_status }}",
        "{{ tool.track_order }}",
        (6, "undefined template variable {{ tool.track_order }}", "$.rules[0].text", "{{ tool.order_status }}"),
    ),
    (
        "malformed template",
        "prompt.yaml",
        "{{ brand }}",
        "{{ the brand }}",
        (5, "malformed template '{{ the brand }}'", "$.blocks[0].text", "one name"),
    ),
    (
        "unclosed template",
        "skills/order_help.yaml",
        "{{ tool.order_status }}",
        "{{ tool.order_status",
        (6, "unclosed template: '{{' without '}}'", "$.rules[0].text", "close it"),
    ),
    (
        "feedback template uses a variable the runtime does not fill",
        "hooks.yaml",
        "{{ error }}",
        "{{ reason }}",
        (
            6,
            "undefined template variable {{ reason }}",
            "$.retry.feedback_template",
            "tool, error, attempt, max_attempts",
        ),
    ),
    (
        "template in a description (never filled)",
        "tools/promotions.yaml",
        "description: list",
        "description: at {{ brand }} list",
        (3, "templates are not filled in here", "$.description", "prompt blocks and skill rules"),
    ),
    (
        "retry on an unknown trigger",
        "hooks.yaml",
        "invalid_call]",
        "invalid_cal]",
        (
            4,
            "on[2]: 'invalid_cal' is not one of: tool_error, timeout, invalid_call, empty_result",
            "$.retry.on[2]",
            "did you mean 'invalid_call'?",
        ),
    ),
    (
        "guard names a constraint that does not exist",
        "hooks.yaml",
        "constraint: max_reply_chars",
        "constraint: max_reply_char",
        (
            15,
            "guard uses unknown constraint 'max_reply_char'",
            "$.guards[0].constraint",
            "did you mean 'max_reply_chars'?",
        ),
    ),
    (
        "max_chars guard with both a constraint and a limit",
        "hooks.yaml",
        "constraint: max_reply_chars",
        "constraint: max_reply_chars\n    limit: 80",
        (
            14,
            "a max_chars guard needs exactly one of 'constraint' or 'limit', found 'constraint' and 'limit'",
            "$.guards[0]",
            "",
        ),
    ),
    (
        "banned_phrases guard with an action it cannot take",
        "hooks.yaml",
        "action: revise",
        "action: truncate",
        (19, "action: 'truncate' is not one of: revise, replace", "$.guards[1].action", ""),
    ),
    (
        "banned_phrases guard that replaces without a replacement",
        "hooks.yaml",
        "action: revise",
        "action: replace",
        (17, "missing required field 'replacement'", "$.guards[1]", ""),
    ),
    (
        "field of another guard type",
        "hooks.yaml",
        "constraint: max_reply_chars",
        "constraint: max_reply_chars\n    phrases: [wow]",
        (16, "unknown field 'phrases'", "$.guards[0].phrases", "fields allowed here: action, constraint, limit, type"),
    ),
    (
        "tool parameters: unknown JSON Schema type",
        "tools/stock_check.yaml",
        "type: string\n    variant",
        "type: strin\n    variant",
        (10, "'strin' is not a JSON Schema type", "$.parameters.properties.product_id.type", "did you mean 'string'?"),
    ),
    (
        "tool parameters: misspelt keyword (JSON Schema would ignore it)",
        "tools/stock_check.yaml",
        "description: size",
        "descripton: size",
        (
            13,
            "unknown JSON Schema keyword 'descripton'",
            "$.parameters.properties.variant.descripton",
            "did you mean 'description'?",
        ),
    ),
    (
        "tool parameters: required parameter not defined",
        "tools/stock_check.yaml",
        "required: [product_id]",
        "required: [product_id, colour]",
        (14, "required parameter 'colour' is not defined under properties", "$.parameters.required[1]", ""),
    ),
    (
        "tool parameters: not an object schema",
        "tools/promotions.yaml",
        "type: object",
        "type: array",
        (7, "type: must be 'object', found 'array'", "$.parameters.type", "type: object"),
    ),
    (
        "tool parameters: invalid JSON Schema",
        "tools/promotions.yaml",
        "required: [product_id]",
        "required: product_id",
        (11, "required: expected a list, found the text 'product_id'", "$.parameters.required", ""),
    ),
    (
        "variable name that is not a key",
        "harness.yaml",
        "  brand:",
        "  Brand-X:",
        (9, "'Brand-X' is not a valid key", '$.variables["Brand-X"]', "lower_snake_case"),
    ),
]


@pytest.mark.parametrize("what,rel,old,new,expected", CASES, ids=[c[0] for c in CASES])
def test_each_problem_is_reported_where_it_is_with_a_hint(tmp_path, sim_backends, what, rel, old, new, expected):
    root = copy_harness(tmp_path / "lc")
    edit(root, rel, old, new)
    line, message, path, hint = expected
    issues = validate_harness_dir(root)
    match = [i for i in issues if i.file == rel and i.message == message]
    assert match, f"{what}: no {message!r} in {[str(i) for i in issues]}"
    issue = match[0]
    assert (issue.line, issue.path) == (line, path)
    assert issue.col is not None and issue.col >= 1
    assert hint in issue.hint
    with pytest.raises(HarnessError) as e:
        load_harness(root)
    assert any(i.message == message for i in e.value.issues)


def test_every_problem_is_reported_not_only_the_first(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    edit(root, "skills/greeting.yaml", "description:", "descripton:")
    edit(root, "hooks.yaml", "max_attempts: 2", "max_attempts: two")
    edit(root, "prompt.yaml", "value: 120", "value: 250")
    edit(root, "tools/stock_check.yaml", "sim.get_stock", "sim.get_stocks")
    files = [i.file for i in validate_harness_dir(root)]
    # Sorted in load order: harness.yaml, prompt.yaml, hooks.yaml, skills/, tools/.
    assert files == ["prompt.yaml", "hooks.yaml", "skills/greeting.yaml", "tools/stock_check.yaml"]


def test_two_skill_files_with_one_key_are_an_error_naming_both_files(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    edit(root, "skills/greeting.yaml", "key: greeting", "key: complaint")
    issues = validate_harness_dir(root)
    assert [str(i) for i in issues] == [
        "skills/greeting.yaml:1:6: skill key 'complaint' is already used by skills/complaint.yaml ($.key)"
        " — every skill needs its own key; change the key in one of the two files (file names do not matter)"
    ]


def test_a_skill_file_named_differently_from_its_key_is_fine(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    (root / "skills" / "greeting.yaml").rename(root / "skills" / "hello_there.yaml")
    assert validate_harness_dir(root) == []


def test_names_must_be_unique_across_files_and_not_the_skill_loaders(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    edit(root, "tools/stock_check.yaml", "name: check_stock", "name: get_promotions")
    edit(root, "tools/return_policy.yaml", "name: get_return_policy", "name: load_skill")
    edit(root, "skills/greeting.yaml", "name: greet_viewer", "name: order_help")
    messages = {(i.file, i.message) for i in validate_harness_dir(root)}
    assert messages == {
        ("tools/stock_check.yaml", "tool name 'get_promotions' is already used by tools/promotions.yaml"),
        ("tools/return_policy.yaml", "tool name 'load_skill' is the name of the skill loader"),
        ("skills/order_help.yaml", "skill name 'order_help' is already used by skills/greeting.yaml"),
    }


def test_a_tool_key_used_twice_names_both_files(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    (root / "tools" / "stock_copy.yaml").write_text(
        (root / "tools" / "stock_check.yaml").read_text().replace("name: check_stock", "name: check_stock_2")
    )
    issues = validate_harness_dir(root)
    assert [(i.file, i.message) for i in issues] == [
        ("tools/stock_copy.yaml", "tool key 'stock_check' is already used by tools/stock_check.yaml")
    ]


# -- backends ----------------------------------------------------------------------------------


def test_unknown_backends_are_checked_against_the_registry(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    edit(root, "tools/stock_check.yaml", "sim.get_stock", "sim.get_stocks")
    edit(root, "tools/promotions.yaml", "sim.get_promotions", "shop.coupons")
    issues = validate_harness_dir(root)
    assert [(i.file, i.line, i.message) for i in issues] == [
        ("tools/promotions.yaml", 4, "unknown backend 'shop.coupons'"),
        ("tools/stock_check.yaml", 4, "unknown backend 'sim.get_stocks'"),
    ]
    assert issues[1].hint == "did you mean 'sim.get_stock'?"
    assert "register your own with @register_backend" in issues[0].hint


def test_an_explicit_backend_set_overrides_the_registry():
    docs = read_documents(LIVECOMMERCE)
    issues = validate_documents(docs, backends={"sim.get_product"})
    assert len(issues) == 7 and all(i.message.startswith("unknown backend") for i in issues)


def test_with_no_backend_registered_at_all_the_backend_check_is_skipped():
    assert validate_documents(read_documents(LIVECOMMERCE), backends=set()) == []


def test_the_registry_registers_finds_and_lists_backends():
    def price(world, args):
        return {"price": 9.99}

    with backends_registered({"shop.price": price}):
        assert get_backend("shop.price") is price
        assert "shop.price" in known_backends()
    assert "shop.price" not in known_backends()
    with pytest.raises(KeyError, match="no tool backend named 'shop.nothing'"):
        get_backend("shop.nothing")


def test_registering_another_function_under_a_taken_name_is_an_error():
    with backends_registered({"shop.taken": lambda world, args: 1}):
        with pytest.raises(ValueError, match="already registered"):

            @register_backend("shop.taken")
            def other(world, args):
                return 2


def test_a_users_backend_module_is_imported_from_the_environment(tmp_path, monkeypatch, sim_backends):
    (tmp_path / "my_team_backends.py").write_text(
        "from harnessctl.harness.backends import register_backend\n\n"
        "@register_backend('team.get_coupons')\n"
        "def get_coupons(world, args):\n"
        "    return []\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(BACKEND_MODULES_ENV, "does_not_exist_yet, my_team_backends")
    root = copy_harness(tmp_path / "lc")
    edit(root, "tools/promotions.yaml", "sim.get_promotions", "team.get_coupons")
    try:
        assert validate_harness_dir(root) == []
    finally:
        from harnessctl.harness import backends

        backends._REGISTRY.pop("team.get_coupons", None)
        backends._imported.discard("my_team_backends")
        sys.modules.pop("my_team_backends", None)


def test_the_simulators_backends_resolve_where_only_the_harness_layer_was_imported():
    code = (
        "import sys; from harnessctl.harness.backends import get_backend; "
        "assert 'harnessctl.sim' not in sys.modules; print(get_backend('sim.get_stock').__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "harnessctl.sim.backends"


def test_a_broken_backend_module_is_a_clear_issue_not_a_traceback(tmp_path, monkeypatch):
    (tmp_path / "broken_team_backends.py").write_text("raise RuntimeError('oops')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(BACKEND_MODULES_ENV, "broken_team_backends")
    issues = validate_harness_dir(LIVECOMMERCE)
    assert [i.message for i in issues] == ["backend module 'broken_team_backends' failed to import: RuntimeError: oops"]
    assert BACKEND_MODULES_ENV in issues[0].hint
    sys.modules.pop("broken_team_backends", None)


def test_a_backend_named_in_a_harness_file_is_never_imported(tmp_path, monkeypatch, sim_backends):
    sentinel = tmp_path / "imported"
    (tmp_path / "evil_backend_mod.py").write_text(f"open({str(sentinel)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    root = copy_harness(tmp_path / "lc")
    edit(root, "tools/promotions.yaml", "sim.get_promotions", "evil_backend_mod.run")
    issues = validate_harness_dir(root)
    assert [i.message for i in issues] == ["unknown backend 'evil_backend_mod.run'"]
    assert not sentinel.exists() and "evil_backend_mod" not in sys.modules


# -- never raises ------------------------------------------------------------------------------


def test_validating_a_folder_never_raises_for_bad_content(tmp_path):
    assert [i.message for i in validate_harness_dir(tmp_path / "nowhere")] == ["no such harness folder"]
    (tmp_path / "empty").mkdir()
    assert [i.message for i in validate_harness_dir(tmp_path / "empty")] == ["missing harness.yaml"]


def test_validate_documents_accepts_plain_dicts_without_positions():
    docs = {
        "harness.yaml": {"name": "tiny"},
        "skills/a.yaml": {"key": "a", "name": "a", "description": "d", "tools": ["nope"]},
    }
    issues = validate_documents(docs, backends=set())
    assert [(i.file, i.message, i.line) for i in issues] == [("skills/a.yaml", "unknown tool key 'nope'", None)]


def test_check_result_carries_the_built_harness_only_when_valid(tmp_path, sim_backends):
    root = copy_harness(tmp_path / "lc")
    edit(root, "prompt.yaml", "value: 120", "value: 250")
    check = check_harness_dir(root)
    assert not check.ok and check.harness is None
    assert check.root == str(root) and Path(check.root).is_dir()
