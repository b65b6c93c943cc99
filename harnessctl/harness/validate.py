"""Validation of harness documents: a JSON Schema per file, then checks across files.

Every problem becomes an :class:`Issue` with the file, line and column (from the round-trip
YAML positions), a message, the JSON path inside the document and a hint. Validation never
stops at the first problem and never raises for bad content.

Checks across files: unique skill and tool keys and names (a tool may not take the skill
loader's name), skills that list unknown tool keys, unknown tool backends (see
:mod:`harnessctl.harness.backends`), constraint values outside ``[min, max]``, undefined or
malformed ``{{ }}`` templates, duplicate block and rule keys, guards naming a missing constraint.

>>> from harnessctl.harness.loader import read_documents
>>> validate_documents(read_documents("harnesses/livecommerce"), root="harnesses/livecommerce")
[]
>>> print(validate_documents(read_documents("broken"), root="broken")[0])      # doctest: +SKIP
skills/greeting.yaml:3:1: unknown field 'descripton' ($.descripton) — did you mean 'description'?

A whole folder, read, validated and built: :func:`harnessctl.harness.check.check_harness_dir`.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from .backends import known_backends
from .errors import HarnessError, Issue
from .model import (
    RETRY_TEMPLATE_VARIABLES,
    Constraint,
    Harness,
    Prompt,
    Skill,
    SkillLoader,
    Tool,
)
from .render import TEMPLATE_RE, template_context
from .yamlio import safe_harness_path

#: The JSON Schemas of the harness files (``schemas/`` at the top of the project).
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"

HARNESS_FILE, PROMPT_FILE, HOOKS_FILE = "harness.yaml", "prompt.yaml", "hooks.yaml"
SKILLS_PREFIX, TOOLS_PREFIX = "skills/", "tools/"

#: Forms checked by ``pattern`` in the schemas: what the value is called and how to fix it.
PATTERN_HINTS: dict[str, tuple[str, str]] = {
    "^[a-z][a-z0-9_]*$": ("key", "keys are lower_snake_case: a letter, then a-z, 0-9 or _ (e.g. product_search)"),
    "^[A-Za-z][A-Za-z0-9_\\-]{0,63}$": (
        "name",
        "names are tool-call safe: a letter, then letters, digits, _ or -, at most 64 characters",
    ),
    "^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$": (
        "backend name",
        "a backend is a dotted name such as sim.get_product",
    ),
    "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$": (
        "harness name",
        "a harness name is letters, digits, _, . or -, at most 64 characters",
    ),
    "^[A-Za-z0-9][A-Za-z0-9_.+\\-]{0,63}$": ("version", "a version looks like v3 or 1.2.0"),
    "^(?!.*(^|/)\\.\\.?(/|$))[A-Za-z0-9_.\\-]+(/[A-Za-z0-9_.\\-]+)*$": (
        "file path",
        "a path inside the skill's folder such as references/coupons.md: letters, digits, _, . and -, no ..",
    ),
}

#: Hint of a tool without ``backend`` (an imported tool not bound yet).
BIND_HINT = (
    "bind the tool: add `backend:` naming a simulator backend (by key, e.g. sim.get_promotions) or a function of "
    "your own registered with @register_backend in a module listed in HARNESSCTL_BACKEND_MODULES; "
    "`harnessctl import tools FILE --bind NAME=BACKEND` binds on import"
)

_JSON_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "null": "null",
}

#: Keywords of JSON Schema 2020-12 (plus the older ``definitions``/``dependencies``/``additionalItems``).
JSON_SCHEMA_KEYWORDS = frozenset(
    """$schema $id $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $comment $defs
    prefixItems items contains additionalProperties properties patternProperties dependentSchemas
    propertyNames if then else allOf anyOf oneOf not unevaluatedItems unevaluatedProperties
    type const enum multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength
    minLength pattern maxItems minItems uniqueItems maxContains minContains maxProperties
    minProperties required dependentRequired title description default deprecated readOnly
    writeOnly examples format contentEncoding contentMediaType contentSchema definitions
    dependencies additionalItems""".split()
)
_ONE_SUBSCHEMA = (
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "additionalItems",
)
_MAP_OF_SUBSCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LIST_OF_SUBSCHEMAS = ("allOf", "anyOf", "oneOf", "prefixItems")

_BRACES_RE = re.compile(r"\{\{(.*?)\}\}", re.S)


# -- public API --------------------------------------------------------------------------------


def schema_name(rel: str) -> str | None:
    """The schema (``harness``, ``prompt``, ``hooks``, ``skill``, ``tool``) of a harness file."""
    if rel == HARNESS_FILE:
        return "harness"
    if rel == PROMPT_FILE:
        return "prompt"
    if rel == HOOKS_FILE:
        return "hooks"
    if rel.startswith(SKILLS_PREFIX):
        return "skill"
    if rel.startswith(TOOLS_PREFIX):
        return "tool"
    return None


def issue_under(root: str | Path, issue: Issue) -> Issue:
    """``issue`` with its file shown as the user reaches it: a harness file under ``root``.

    >>> str(issue_under("shop", Issue("skills/greeting.yaml", "bad", 3, 1)))
    'shop/skills/greeting.yaml:3:1: bad'
    """
    file = issue.file
    is_harness_file = schema_name(file) is not None or file.rstrip("/") in ("skills", "tools")
    if file and is_harness_file and not Path(file).is_absolute():
        file = str(Path(root) / file) + ("/" if file.endswith("/") else "")
    return replace(issue, file=file)


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema called ``name``, e.g. ``load_schema("tool")["required"]``."""
    with open(SCHEMA_DIR / f"{name}.schema.json", encoding="utf-8") as f:
        return json.load(f)


def validate_documents(
    docs: dict[str, Any],
    root: str | None = None,
    backends: Iterable[str] | None = None,
) -> list[Issue]:
    """Every problem found in the documents of one harness (empty when valid).

    ``docs`` maps a file's path relative to the harness folder to its parsed document (as
    :func:`~harnessctl.harness.loader.read_documents` returns them). ``backends`` are the tool
    backends that exist; by default those of the registry
    (:func:`~harnessctl.harness.backends.known_backends`). When no backend is known at all the
    backend check is skipped: nothing registered means nothing to check against.

    >>> docs = read_documents("harnesses/livecommerce")                 # doctest: +SKIP
    >>> validate_documents(docs, backends={"sim.get_product"})[0].message  # doctest: +SKIP
    "unknown backend 'sim.search_products'"
    """
    order = {rel: i for i, rel in enumerate(docs)}
    issues: list[Issue] = []
    for rel, doc in docs.items():
        name = schema_name(rel)
        if name is None:
            continue
        issues += _schema_issues(rel, doc, _validator(name))
        if name == "tool" and isinstance(doc, dict):
            issues += _parameter_issues(rel, doc)
    if backends is None:
        known = known_backends()
    else:
        known = set(backends)
    issues = [_with_bind_hint(i, known) for i in issues]
    issues += _CrossFileChecks(docs, known).run()
    if root is not None:
        issues += _skill_file_issues(docs, root)
    return _sorted_unique(issues, order)


def is_unbound_issue(issue: Issue) -> bool:
    """Whether ``issue`` only says that a tool has no backend yet (an imported, unbound tool).

    >>> is_unbound_issue(Issue("tools/coupons.yaml", "missing required field 'backend'", 1, 1, "$"))
    True
    """
    return issue.file.startswith(TOOLS_PREFIX) and issue.message == "missing required field 'backend'"


def _with_bind_hint(issue: Issue, known: set[str]) -> Issue:
    if not is_unbound_issue(issue):
        return issue
    sim = sorted(b for b in known if b.startswith("sim."))
    listed = f" (simulator backends: {', '.join(sim)})" if sim else ""
    return replace(issue, hint=f"{BIND_HINT}{listed}")


def _skill_file_issues(docs: dict[str, Any], root: str) -> list[Issue]:
    """Every file a skill lists under ``files``/``inert_files`` must be a regular file in
    ``skills/<key>/`` — never a link, never outside the harness folder."""
    issues: list[Issue] = []
    for rel, doc in docs.items():
        key = _text(doc, "key")
        if not rel.startswith(SKILLS_PREFIX) or key is None:
            continue
        for fld in ("files", "inert_files"):
            listed = doc.get(fld)
            for i, name in enumerate(listed if isinstance(listed, list) else []):
                if not isinstance(name, str):
                    continue
                where = f"{SKILLS_PREFIX}{key}/{name}"
                problem = ""
                try:
                    path = safe_harness_path(root, where)
                    if not path.is_file():
                        problem = f"{fld}[{i}]: {where} is missing"
                except HarnessError as e:
                    problem = f"{fld}[{i}]: {e.issues[0].message}"
                if problem:
                    line, col = _position(doc, (fld, i))
                    hint = f"put the file at {where} inside the harness folder, or remove it from {fld}"
                    issues.append(Issue(rel, problem, line, col, _json_path((fld, i)), hint))
    return issues


# -- JSON Schema per file ----------------------------------------------------------------------


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name))


@functools.cache
def _meta_validator() -> Draft202012Validator:
    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


def schema_issues(rel: str, doc: Any, name: str) -> list[Issue]:
    """Plain-words issues of ``doc`` (the file ``rel``) against the JSON Schema ``name``, each
    with its line where ``doc`` is a round-trip mapping.

    >>> schema_issues("phrasings.yaml", {"phrasings": {"price": []}}, "phrasings")[0].message
    'price: needs at least 1 item'
    """
    return _schema_issues(rel, doc, _validator(name))


def _schema_issues(rel: str, doc: Any, validator: Draft202012Validator, prefix: tuple[Any, ...] = ()) -> list[Issue]:
    issues: list[Issue] = []
    for error in validator.iter_errors(_at(doc, prefix) if prefix else doc):
        issues += _describe(rel, doc, error, prefix)
    return issues


def _at(doc: Any, path: Iterable[Any]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _describe(rel: str, doc: Any, error: ValidationError, prefix: tuple[Any, ...]) -> list[Issue]:
    """Plain-words issues for one jsonschema error (some errors are several issues)."""
    path = (*prefix, *error.absolute_path)
    v, vv, inst, schema = error.validator, error.validator_value, error.instance, error.schema
    label = _label(path)

    def issue(message: str, where: tuple[Any, ...] = path, *, key: bool = False, hint: str = "") -> Issue:
        line, col = _position(doc, where, key=key)
        return Issue(rel, message, line, col, _json_path(where), hint)

    if "propertyNames" in error.absolute_schema_path and isinstance(inst, str):
        noun, hint = PATTERN_HINTS.get(str(schema.get("pattern")), ("key", ""))
        if v == "maxLength":
            return [issue(f"{inst!r} is longer than {vv} characters", (*path, inst), key=True)]
        return [issue(f"{inst!r} is not a valid {noun}", (*path, inst), key=True, hint=hint)]
    if v == "additionalProperties" and isinstance(inst, dict):
        allowed = list((schema.get("properties") or {}).keys())
        patterns = list((schema.get("patternProperties") or {}).keys())
        extras = [k for k in inst if k not in allowed and not any(re.search(p, str(k)) for p in patterns)]
        return [
            issue(
                f"unknown field {k!r}",
                (*path, k),
                key=True,
                hint=_did_you_mean(k, allowed) or f"fields allowed here: {', '.join(sorted(allowed))}",
            )
            for k in extras
        ]
    if v == "required" and isinstance(inst, dict):
        props = schema.get("properties") or {}
        unknown = [k for k in inst if isinstance(k, str) and k not in props]
        out = []
        for name in vv:
            if name in inst:
                continue
            if schema.get("additionalProperties") is False and difflib.get_close_matches(
                name, unknown, n=1, cutoff=0.6
            ):
                continue  # a misspelt field: its "unknown field ... did you mean" issue says it all
            what = props.get(name, {}).get("description", "") if isinstance(props.get(name), dict) else ""
            hint = f"add `{name}:`" + (f" ({_lower_first(what)})" if what else "")
            out.append(issue(f"missing required field {name!r}", hint=hint))
        return out
    if v == "type":
        expected = vv if isinstance(vv, list) else [vv]
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in expected)
        hint = ""
        if "string" in expected and isinstance(inst, (int, float)) and not isinstance(inst, bool):
            hint = f'quote it: "{inst}"'
        return [issue(f"{label}expected {words}, found {_describe_value(inst)}", hint=hint)]
    if v == "enum":
        options = ", ".join(str(o) for o in vv)
        return [
            issue(f"{label}{_short(inst)} is not one of: {options}", hint=_did_you_mean(inst, [str(o) for o in vv]))
        ]
    if v == "const":
        hint = "tool arguments are always an object: `type: object`" if path == ("parameters", "type") else ""
        return [issue(f"{label}must be {_short(vv)}, found {_short(inst)}", hint=hint)]
    if v == "pattern":
        noun, hint = PATTERN_HINTS.get(str(vv), ("value", f"it must match {vv}"))
        return [issue(f"{label}{_short(inst)} is not a valid {noun}", hint=hint)]
    if v == "minLength":
        return [issue(f"{label}must not be empty" if vv == 1 else f"{label}must be at least {vv} characters")]
    if v == "maxLength":
        return [issue(f"{label}is longer than {vv} characters")]
    if v == "uniqueItems" and isinstance(inst, list):
        seen: list[Any] = []
        dups: list[Any] = []
        for x in inst:
            if x in seen and x not in dups:
                dups.append(x)
            seen.append(x)
        listed = ", ".join(_short(d) for d in dups)
        return [issue(f"{label}lists {listed} more than once", hint="remove the repeated items")]
    if v == "minItems":
        return [issue(f"{label}needs at least {vv} item{'s' if vv != 1 else ''}")]
    if v == "maxItems":
        return [issue(f"{label}has more than {vv} items")]
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {
            "minimum": "is less than the minimum",
            "maximum": "is more than the maximum",
            "exclusiveMinimum": "must be greater than",
            "exclusiveMaximum": "must be less than",
        }[v]
        return [issue(f"{label}{_short(inst)} {words} {vv}")]
    if v == "oneOf" and isinstance(vv, list) and all(isinstance(s, dict) and set(s) == {"required"} for s in vv):
        names = [s["required"][0] for s in vv]
        present = [n for n in names if isinstance(inst, dict) and n in inst]
        either = " or ".join(repr(n) for n in names)
        found = f", found {' and '.join(repr(n) for n in present)}" if present else ""
        kind = inst.get("type") if isinstance(inst, dict) else None
        what = f"a {kind} guard" if isinstance(kind, str) else "this"
        return [issue(f"{what} needs exactly one of {either}{found}")]
    if v == "anyOf" and path and path[-1] == "type" and "parameters" in path:
        bad = inst if isinstance(inst, str) else _short(inst)
        return [
            issue(
                f"{_short(bad)} is not a JSON Schema type",
                hint=_did_you_mean(bad, _JSON_TYPES) or f"types: {', '.join(_JSON_TYPES)}",
            )
        ]
    if v is None or schema is False:
        return [issue(f"{label}not allowed here")]
    return [issue(f"{label}{error.message}")]


# -- a tool's parameters -----------------------------------------------------------------------


def _parameter_issues(rel: str, doc: dict[str, Any]) -> list[Issue]:
    """A tool's ``parameters`` is itself a JSON Schema: check it against the metaschema, then
    flag unknown keywords (a typo such as ``descripton`` is silently ignored by JSON Schema)
    and required parameters that are not defined."""
    params = doc.get("parameters")
    if not isinstance(params, dict):
        return []
    issues = _schema_issues(rel, doc, _meta_validator(), ("parameters",))
    stack: list[tuple[Any, tuple[Any, ...]]] = [(params, ("parameters",))]
    while stack:
        schema, path = stack.pop()
        if not isinstance(schema, dict):
            continue
        for k in schema:
            if k not in JSON_SCHEMA_KEYWORDS and not str(k).startswith("x-"):
                line, col = _position(doc, (*path, k), key=True)
                issues.append(
                    Issue(
                        rel,
                        f"unknown JSON Schema keyword {k!r}",
                        line,
                        col,
                        _json_path((*path, k)),
                        _did_you_mean(k, JSON_SCHEMA_KEYWORDS)
                        or "see https://json-schema.org/draft/2020-12 for the keywords",
                    )
                )
        ref = schema.get("$ref")
        if isinstance(ref, str) and not _ref_resolves(params, ref):
            line, col = _position(doc, (*path, "$ref"))
            local = ref.startswith("#")
            issues.append(
                Issue(
                    rel,
                    f"$ref {ref!r} does not resolve inside the parameters schema"
                    if local
                    else f"$ref {ref!r} points outside the harness",
                    line,
                    col,
                    _json_path((*path, "$ref")),
                    "define it under $defs in the same schema"
                    if local
                    else "a harness never reaches outside its folder: copy the referenced schema under $defs and "
                    "refer to it as #/$defs/<name>",
                )
            )
        props = schema.get("properties")
        required = schema.get("required")
        if isinstance(props, dict) and isinstance(required, list):
            for i, name in enumerate(required):
                if isinstance(name, str) and name not in props:
                    line, col = _position(doc, (*path, "required", i))
                    issues.append(
                        Issue(
                            rel,
                            f"required parameter {name!r} is not defined under properties",
                            line,
                            col,
                            _json_path((*path, "required", i)),
                            _did_you_mean(name, props) or "define it under properties or remove it from required",
                        )
                    )
        for k in _ONE_SUBSCHEMA:
            if k in schema:
                stack.append((schema[k], (*path, k)))
        for k in _MAP_OF_SUBSCHEMAS:
            if isinstance(schema.get(k), dict):
                stack.extend((sub, (*path, k, name)) for name, sub in schema[k].items())
        for k in _LIST_OF_SUBSCHEMAS:
            if isinstance(schema.get(k), list):
                stack.extend((sub, (*path, k, i)) for i, sub in enumerate(schema[k]))
    return issues


def _ref_resolves(root: Any, ref: str) -> bool:
    """Whether ``ref`` is a local reference (``#``, ``#/$defs/x``, ``#anchor``) found inside ``root``."""
    if not ref.startswith("#"):
        return False
    fragment = ref[1:]
    if not fragment:
        return True
    if not fragment.startswith("/"):  # a plain-name fragment: some subschema's $anchor
        return _has_anchor(root, fragment)
    node = root
    for token in fragment[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


def _has_anchor(node: Any, name: str) -> bool:
    if isinstance(node, dict):
        return node.get("$anchor") == name or any(_has_anchor(v, name) for v in node.values())
    if isinstance(node, list):
        return any(_has_anchor(v, name) for v in node)
    return False


def parameter_issues(rel: str, doc: dict[str, Any]) -> list[Issue]:
    """Problems of a tool document's ``parameters`` as a JSON Schema (the metaschema, unknown
    keywords, undefined required parameters, ``$ref`` that does not resolve inside it).

    >>> parameter_issues("t", {"parameters": {"type": "object", "properties": {}, "required": ["q"]}})[0].message
    "required parameter 'q' is not defined under properties"
    """
    return _parameter_issues(rel, doc)


# -- checks across files -----------------------------------------------------------------------


class _CrossFileChecks:
    """Checks that need more than one file. Every accessor tolerates malformed documents: the
    schema issues for those are already reported, and one bad file must not hide the others'."""

    def __init__(self, docs: dict[str, Any], backends: set[str]):
        self.docs = docs
        self.backends = backends
        self.issues: list[Issue] = []
        self.top = _mapping(docs.get(HARNESS_FILE))
        self.prompt = _mapping(docs.get(PROMPT_FILE))
        self.hooks = _mapping(docs.get(HOOKS_FILE))
        self.skills = [(r, d) for r, d in docs.items() if r.startswith(SKILLS_PREFIX) and isinstance(d, dict)]
        self.tools = [(r, d) for r, d in docs.items() if r.startswith(TOOLS_PREFIX) and isinstance(d, dict)]
        loader = _mapping(self.top.get("skill_loader"))
        self.loader_name = _text(loader, "name") or SkillLoader.name
        self.tool_keys = {k: r for r, d in self.tools if (k := _text(d, "key")) is not None}
        self.constraints = {k: c for k, c in _mapping(self.prompt.get("constraints")).items() if isinstance(k, str)}

    def run(self) -> list[Issue]:
        self._unique("skill", self.skills, "key")
        self._unique("skill", self.skills, "name")
        self._unique("tool", self.tools, "key")
        self._unique("tool", self.tools, "name")
        self._order("skill", self.skills)
        self._order("tool", self.tools)
        self._loader_name()
        self._skill_tools()
        self._backends()
        self._constraint_ranges()
        self._keyed_list(PROMPT_FILE, self.prompt, "blocks", "block")
        for rel, doc in self.skills:
            self._keyed_list(rel, doc, "rules", "rule")
        self._guards()
        self._templates()
        return self.issues

    def _add(
        self, rel: str, doc: Any, path: tuple[Any, ...], message: str, hint: str = "", *, key: bool = False
    ) -> None:
        line, col = _position(doc, path, key=key)
        self.issues.append(Issue(rel, message, line, col, _json_path(path), hint))

    def _unique(self, kind: str, items: list[tuple[str, Any]], fld: str) -> None:
        first: dict[str, str] = {}
        for rel, doc in items:
            value = _text(doc, fld)
            if value is None:
                continue
            if value in first:
                if fld == "key":
                    hint = f"every {kind} needs its own key; change the key in one of the two files (file names do not matter)"
                else:
                    hint = f"the model tells {kind}s apart by name; choose another name for one of them"
                self._add(rel, doc, (fld,), f"{kind} {fld} {value!r} is already used by {first[value]}", hint)
            else:
                first[value] = rel

    def _order(self, kind: str, items: list[tuple[str, Any]]) -> None:
        """``order.skills`` / ``order.tools`` in harness.yaml must name every element exactly once."""
        listed = _mapping(self.top.get("order")).get(f"{kind}s")
        if not isinstance(listed, list):
            return
        keys = {k: r for r, d in items if (k := _text(d, "key")) is not None}
        where = ("order", f"{kind}s")
        for i, k in enumerate(listed):
            if isinstance(k, str) and k not in keys:
                hint = _did_you_mean(k, keys) or f"list only the keys of the files under {kind}s/"
                self._add(HARNESS_FILE, self.top, (*where, i), f"order.{kind}s names unknown {kind} {k!r}", hint)
        for k, rel in keys.items():
            if k not in listed:
                self._add(
                    HARNESS_FILE,
                    self.top,
                    where,
                    f"order.{kind}s does not list {kind} {k!r} ({rel})",
                    f"add {k} where it should appear, or remove order.{kind}s to use file-name order",
                )

    def _loader_name(self) -> None:
        for rel, doc in self.tools:
            if _text(doc, "name") == self.loader_name:
                self._add(
                    rel,
                    doc,
                    ("name",),
                    f"tool name {self.loader_name!r} is the name of the skill loader",
                    "rename the tool, or change skill_loader.name in harness.yaml",
                )

    def _skill_tools(self) -> None:
        key_by_name = {n: k for r, d in self.tools if (n := _text(d, "name")) and (k := _text(d, "key"))}
        for rel, doc in self.skills:
            refs = doc.get("tools")
            if not isinstance(refs, list):
                continue
            for i, ref in enumerate(refs):
                if not isinstance(ref, str) or ref in self.tool_keys:
                    continue
                if ref in key_by_name:
                    hint = f"{ref!r} is the name of tool {key_by_name[ref]!r}; skills list tools by key"
                else:
                    hint = _did_you_mean(ref, self.tool_keys) or (
                        f"known tool keys: {', '.join(sorted(self.tool_keys))}"
                        if self.tool_keys
                        else "add the tool under tools/"
                    )
                self._add(rel, doc, ("tools", i), f"unknown tool key {ref!r}", hint)

    def _backends(self) -> None:
        if not self.backends:
            return
        for rel, doc in self.tools:
            backend = _text(doc, "backend")
            if backend is None or backend in self.backends:
                continue
            hint = _did_you_mean(backend, self.backends)
            if not hint:
                known = sorted(self.backends)
                listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
                hint = (
                    f"known backends: {listed}; register your own with @register_backend and HARNESSCTL_BACKEND_MODULES"
                )
            self._add(rel, doc, ("backend",), f"unknown backend {backend!r}", hint)

    def _constraint_ranges(self) -> None:
        for key, c in self.constraints.items():
            if not isinstance(c, dict):
                continue
            value, lo, hi = (c.get(f) for f in ("value", "min", "max"))
            if not all(_is_number(x) for x in (value, lo, hi)):
                continue
            path = ("constraints", key)
            if lo > hi:
                self._add(
                    PROMPT_FILE,
                    self.prompt,
                    (*path, "min"),
                    f"{key}: min {_num(lo)} is greater than max {_num(hi)}",
                    "swap them or fix the range",
                )
            elif not lo <= value <= hi:
                self._add(
                    PROMPT_FILE,
                    self.prompt,
                    (*path, "value"),
                    f"{key}: value {_num(value)} is outside its range [{_num(lo)}, {_num(hi)}]",
                    "change the value, or widen min/max if the new value is intended",
                )

    def _keyed_list(self, rel: str, doc: Any, fld: str, kind: str) -> None:
        items = doc.get(fld) if isinstance(doc, dict) else None
        if not isinstance(items, list):
            return
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            key = _text(item, "key")
            if key is None:
                continue
            if key in first:
                self._add(
                    rel,
                    doc,
                    (fld, i, "key"),
                    f"duplicate {kind} key {key!r} (also {fld}[{first[key]}])",
                    f"{kind} keys identify a {kind} across versions; give this one its own key",
                )
            else:
                first[key] = i

    def _guards(self) -> None:
        guards = self.hooks.get("guards")
        if not isinstance(guards, list):
            return
        for i, guard in enumerate(guards):
            name = _text(guard, "constraint")
            if name is None or name in self.constraints:
                continue
            hint = _did_you_mean(name, self.constraints) or (
                f"constraints in prompt.yaml: {', '.join(sorted(self.constraints))}"
                if self.constraints
                else "define it under constraints in prompt.yaml"
            )
            self._add(
                HOOKS_FILE, self.hooks, ("guards", i, "constraint"), f"guard uses unknown constraint {name!r}", hint
            )

    def _templates(self) -> None:
        names = set(template_context(self._stub_harness()))
        blocks = self.prompt.get("blocks")
        if isinstance(blocks, list):
            for i, _block in enumerate(blocks):
                self._template_text(PROMPT_FILE, self.prompt, ("blocks", i, "text"), names)
        for rel, doc in self.skills:
            rules = doc.get("rules")
            if isinstance(rules, list):
                for i, _rule in enumerate(rules):
                    self._template_text(rel, doc, ("rules", i, "text"), names)
            self._no_template(rel, doc, ("description",))
        for rel, doc in self.tools:
            self._no_template(rel, doc, ("description",))
        self._no_template(HARNESS_FILE, self.top, ("skill_loader", "description"))
        retry = self.hooks.get("retry")
        if isinstance(retry, dict):
            self._template_text(
                HOOKS_FILE, self.hooks, ("retry", "feedback_template"), set(RETRY_TEMPLATE_VARIABLES), retry=True
            )

    def _template_text(
        self, rel: str, doc: Any, path: tuple[Any, ...], names: set[str], *, retry: bool = False
    ) -> None:
        try:
            text = _at(doc, path)
        except (KeyError, IndexError, TypeError):
            return
        if not isinstance(text, str) or "{{" not in text and "}}" not in text:
            return
        for problem, hint in _malformed_templates(text):
            self._add(rel, doc, path, problem, hint)
        for name in TEMPLATE_RE.findall(text):
            if name in names:
                continue
            if retry:
                hint = f"a retry feedback_template can use: {', '.join(RETRY_TEMPLATE_VARIABLES)}"
            else:
                hint = self._template_hint(name, names)
            self._add(rel, doc, path, f"undefined template variable {{{{ {name} }}}}", hint)

    def _template_hint(self, name: str, names: set[str]) -> str:
        kind, _, rest = name.partition(".")
        if kind in ("tool", "skill") and rest:
            items = self.tools if kind == "tool" else self.skills
            for _rel, d in items:
                if _text(d, "name") == rest and _text(d, "key"):
                    return f"templates refer to a {kind} by key: {{{{ {kind}.{_text(d, 'key')} }}}}"
            keys = sorted(n.partition(".")[2] for n in names if n.startswith(kind + "."))
            guess = _did_you_mean(rest, keys)
            return f"no {kind} has the key {rest!r}" + (
                f"; {guess}" if guess else f" (keys: {', '.join(keys)})" if keys else ""
            )
        guess = _did_you_mean(name, names)
        if guess:
            return guess
        return "define it under variables in harness.yaml, or use {{ tool.<key> }}, {{ skill.<key> }}, {{ skill_loader }} or a constraint key"

    def _no_template(self, rel: str, doc: Any, path: tuple[Any, ...]) -> None:
        try:
            text = _at(doc, path)
        except (KeyError, IndexError, TypeError):
            return
        if isinstance(text, str) and "{{" in text:
            self._add(
                rel,
                doc,
                path,
                "templates are not filled in here",
                "{{ }} templates work in prompt blocks and skill rules; write the text out",
            )

    def _stub_harness(self) -> Harness:
        """Just enough of a harness for :func:`template_context` to list every template name."""
        variables = _mapping(self.top.get("variables"))
        skills = [Skill(key=k, name=k, description="") for _r, d in self.skills if (k := _text(d, "key"))]
        tools = [Tool(key=k, name=k, description="", parameters={}, backend="") for k in self.tool_keys]
        return Harness(
            name="",
            variables={k: "" for k in variables if isinstance(k, str)},
            skill_loader=SkillLoader(name=self.loader_name),
            prompt=Prompt(constraints={k: Constraint(k, 0, 0, 0) for k in self.constraints}),
            skills=skills,
            tools=tools,
        )


def _malformed_templates(text: str) -> list[tuple[str, str]]:
    problems = []
    for m in _BRACES_RE.finditer(text):
        if not TEMPLATE_RE.fullmatch(m.group(0)):
            problems.append(
                (
                    f"malformed template {_short(m.group(0))}",
                    "a template is {{ name }} with one name, e.g. {{ tool.product_search }}",
                )
            )
    rest = _BRACES_RE.sub("", text)
    if "{{" in rest:
        problems.append(("unclosed template: '{{' without '}}'", "close it with }}"))
    elif "}}" in rest:
        problems.append(("stray '}}' without '{{'", "remove it or open the template with {{"))
    return problems


# -- positions and words -----------------------------------------------------------------------


def _position(doc: Any, path: Iterable[Any], *, key: bool = False) -> tuple[int | None, int | None]:
    """1-based (line, column) of ``path`` in a round-trip document: of the key itself when
    ``key``, else of the value. Falls back to the nearest enclosing node that has a position."""
    path = tuple(path)
    nodes = [doc]
    try:
        for p in path:
            nodes.append(nodes[-1][p])
    except (KeyError, IndexError, TypeError):
        path = path[: len(nodes) - 1]
    for depth in range(len(path), 0, -1):
        parent, last = nodes[depth - 1], path[depth - 1]
        lc = getattr(parent, "lc", None)
        if lc is None:
            continue
        try:
            if isinstance(parent, dict):
                line, col = lc.key(last) if key and depth == len(path) else lc.value(last)
            elif isinstance(parent, list):
                line, col = lc.item(last)
            else:
                continue
            return line + 1, col + 1
        except (KeyError, IndexError, TypeError, AttributeError):
            continue
    lc = getattr(doc, "lc", None)
    if lc is not None and getattr(lc, "line", None) is not None:
        return lc.line + 1, (lc.col or 0) + 1
    return None, None


def _json_path(path: Iterable[Any]) -> str:
    out = "$"
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", p):
            out += f".{p}"
        else:
            out += f"[{json.dumps(str(p), ensure_ascii=False)}]"
    return out


def _label(path: tuple[Any, ...]) -> str:
    if not path:
        return ""
    last = path[-1]
    if isinstance(last, int):
        before = path[-2] if len(path) > 1 and isinstance(path[-2], str) else "item"
        return f"{before}[{last}]: "
    return f"{last}: "


def _describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {_short(value)}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    return f"a {type(value).__name__}"


def _did_you_mean(word: Any, options: Iterable[Any]) -> str:
    if not isinstance(word, str):
        return ""
    match = difflib.get_close_matches(word, [str(o) for o in options], n=1, cutoff=0.6)
    return f"did you mean {match[0]!r}?" if match else ""


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _lower_first(text: str) -> str:
    text = text.rstrip(".")
    return text[:1].lower() + text[1:]


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _text(doc: Any, fld: str) -> str | None:
    value = doc.get(fld) if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _num(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _sorted_unique(issues: list[Issue], order: dict[str, int]) -> list[Issue]:
    seen: set[tuple[Any, ...]] = set()
    unique = []
    for i in issues:
        ident = (i.file, i.path, i.message)
        if ident not in seen:
            seen.add(ident)
            unique.append(i)
    return sorted(unique, key=lambda i: (order.get(i.file, len(order)), i.line or 0, i.col or 0, i.path))
