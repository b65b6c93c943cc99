"""References between harness elements inside free text, and moving them on a rename.

Prompt text should refer to tools and skills by key (``{{ tool.<key> }}``), and then a rename
moves every reference by itself. Real harnesses also name things literally ("call
get_product_details first"), so a rename rewrites those literal mentions too. A literal
mention is rewritten only when the old name looks like an identifier (it has ``_``, ``-``, a
digit or an inner capital), or when it stands in backticks: a tool plainly named ``search``
must not turn every "search" in the prose into the new name. ``{{ ... }}`` templates are never
touched (they hold keys, not names).

>>> rewrite_literal_names("Call get_product_details, not {{ tool.get_product_details }}.",
...                       {"get_product_details": "fetch_item_card"})
'Call fetch_item_card, not {{ tool.get_product_details }}.'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from harnessctl.harness.model import Harness
from harnessctl.harness.render import TEMPLATE_RE

_TEMPLATE_SPAN_RE = re.compile(r"\{\{.*?\}\}")
_IDENTIFIER_LIKE_RE = re.compile(r"[_\-0-9]|[a-z][A-Z]")


def identifier_like(name: str) -> bool:
    """True for names that cannot be ordinary prose words (``track_order``, ``getItem``)."""
    return bool(_IDENTIFIER_LIKE_RE.search(name))


def _name_pattern(names: list[str]) -> re.Pattern[str] | None:
    return _compiled_names(tuple(sorted(set(names))))


@lru_cache(maxsize=256)
def _compiled_names(names: tuple[str, ...]) -> re.Pattern[str] | None:
    plain = [n for n in names if identifier_like(n)]
    quoted = [n for n in names if not identifier_like(n)]
    parts = []
    if plain:
        alt = "|".join(re.escape(n) for n in sorted(plain, key=len, reverse=True))
        parts.append(rf"(?<![\w-])(?P<plain>{alt})(?![\w-])")
    if quoted:
        alt = "|".join(re.escape(n) for n in sorted(quoted, key=len, reverse=True))
        parts.append(rf"`(?P<quoted>{alt})`")
    return re.compile("|".join(parts)) if parts else None


def rewrite_literal_names(text: str, mapping: dict[str, str]) -> str:
    """Replace literal mentions of old names (``mapping`` old -> new) outside templates."""
    if not mapping or not text:
        return text
    pattern = _name_pattern(list(mapping))
    if pattern is None:
        return text

    def sub(m: re.Match[str]) -> str:
        plain = m.groupdict().get("plain")
        if plain:
            return mapping[plain]
        return f"`{mapping[m.group('quoted')]}`"

    out, last = [], 0
    for t in _TEMPLATE_SPAN_RE.finditer(text):
        out.append(pattern.sub(sub, text[last : t.start()]))
        out.append(t.group(0))
        last = t.end()
    out.append(pattern.sub(sub, text[last:]))
    return "".join(out)


def mentions(text: str, names: list[str]) -> set[str]:
    """The names of ``names`` that ``text`` mentions literally (same rules as the rewrite)."""
    pattern = _name_pattern(names)
    if pattern is None or not text:
        return set()
    bare = _TEMPLATE_SPAN_RE.sub(" ", text)
    found = set()
    for m in pattern.finditer(bare):
        found.add(m.groupdict().get("plain") or m.group("quoted"))
    return found


def template_refs(text: str) -> set[str]:
    """The ``{{ name }}`` template names used in ``text`` (e.g. ``{"tool.order_status"}``)."""
    return set(TEMPLATE_RE.findall(text))


TextSlot = tuple[str, Callable[[], str], Callable[[str], None]]


def iter_text_slots(h: Harness) -> Iterator[TextSlot]:
    """Every free text of ``h`` a model may read, as ``(where, get, set)`` triples.

    Covers the harness description and string variables, the skill loader's description, prompt
    blocks and constraint descriptions, skill descriptions and rules, tool and parameter
    descriptions, and the hook texts (retry feedback, result prefix, skill header, guard
    replacements). Banned phrases are reply content, not references, and are left out.
    """

    def attr(obj: Any, name: str, where: str) -> TextSlot:
        return where, (lambda: getattr(obj, name)), (lambda v: setattr(obj, name, v))

    def item(d: dict[str, Any], k: str, where: str) -> TextSlot:
        return where, (lambda: d[k]), (lambda v: d.__setitem__(k, v))

    yield attr(h, "description", "harness.description")
    for k, v in h.variables.items():
        if isinstance(v, str):
            yield item(h.variables, k, f"variables.{k}")
    yield attr(h.skill_loader, "description", "skill_loader.description")
    for b in h.prompt.blocks:
        yield attr(b, "text", f"block:{b.key}")
    for c in h.prompt.constraints.values():
        yield attr(c, "description", f"constraint:{c.key}.description")
    for s in h.skills:
        yield attr(s, "description", f"skill:{s.key}.description")
        for r in s.rules:
            yield attr(r, "text", f"rule:{s.key}/{r.key}")
    for t in h.tools:
        yield attr(t, "description", f"tool:{t.key}.description")
        for path, schema in iter_param_schemas(t.parameters):
            if isinstance(schema.get("description"), str):
                yield item(schema, "description", f"tool:{t.key}.parameters.{path}")
    yield attr(h.hooks.retry, "feedback_template", "hooks.retry.feedback_template")
    yield attr(h.hooks.message, "tool_result_prefix", "hooks.message.tool_result_prefix")
    yield attr(h.hooks.message, "skill_header", "hooks.message.skill_header")
    for i, g in enumerate(h.hooks.guards):
        yield attr(g, "replacement", f"hooks.guards[{i}].replacement")


def iter_param_schemas(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every named property schema inside a tool's JSON Schema, with a dotted path."""
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            if isinstance(sub, dict):
                here = f"{path}.{name}" if path else name
                yield here, sub
                yield from iter_param_schemas(sub, here)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from iter_param_schemas(items, f"{path}[]" if path else "[]")


def rewrite_all_literal_names(h: Harness, mapping: dict[str, str]) -> list[str]:
    """Apply :func:`rewrite_literal_names` to every text slot of ``h``; returns what changed."""
    changed = []
    if not mapping:
        return changed
    for where, get, put in iter_text_slots(h):
        before = get()
        if not isinstance(before, str) or not before:
            continue
        after = rewrite_literal_names(before, mapping)
        if after != before:
            put(after)
            changed.append(where)
    return changed


def surface_names(h: Harness) -> dict[str, str]:
    """Every current surface name -> the element it names (``tool:<key>``, ``skill:<key>``, ``skill_loader``)."""
    names = {t.name: f"tool:{t.key}" for t in h.tools}
    names.update({s.name: f"skill:{s.key}" for s in h.skills})
    names[h.skill_loader.name] = "skill_loader"
    return names


def referenced_keys(h: Harness, text: str) -> set[str]:
    """Elements ``text`` refers to, by template or by literal name (``tool:<key>``, ``skill:<key>``...)."""
    refs = set()
    for name in template_refs(text):
        if name.startswith(("tool.", "skill.")):
            kind, key = name.split(".", 1)
            refs.add(f"{kind}:{key}")
        elif name == "skill_loader":
            refs.add("skill_loader")
    by_name = surface_names(h)
    for name in mentions(text, list(by_name)):
        refs.add(by_name[name])
    return refs
