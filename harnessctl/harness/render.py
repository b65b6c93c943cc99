"""Render a harness into what a model sees: system prompt text + OpenAI tool specs.

Rendering is deterministic and cheap (RL rollouts render thousands of variants a second; see
``benchmarks/bench_harness.py``). Prompt text refers to other elements by *key* through
``{{ ... }}`` templates, so a rename moves every reference with it:

- ``{{ tool.<key> }}`` / ``{{ skill.<key> }}`` — the element's current surface name;
- ``{{ skill_loader }}`` — the name of the skill-loading tool;
- ``{{ <constraint key> }}`` — a constraint's value, e.g. ``{{ max_reply_chars }}``;
- ``{{ <variable> }}`` — a default variable from ``harness.yaml``.

>>> r = render_harness(h)                         # doctest: +SKIP
>>> r.tools[0]["function"]["name"]                # doctest: +SKIP
'load_skill'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .model import Harness, Skill

TEMPLATE_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")


@dataclass
class RenderedHarness:
    """What the model sees, plus the surface -> key maps the runtime and scorer need."""

    system_prompt: str
    tools: list[dict[str, Any]]
    tool_key_by_name: dict[str, str] = field(default_factory=dict)
    skill_key_by_name: dict[str, str] = field(default_factory=dict)
    loader_name: str = "load_skill"


def template_names(text: str) -> list[str]:
    """The ``{{ name }}`` template variables used in ``text``, in order of appearance."""
    return TEMPLATE_RE.findall(text)


def template_context(h: Harness, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every template name a prompt block of ``h`` may use, with its rendered value."""
    ctx: dict[str, Any] = {str(k): v for k, v in h.variables.items()}
    for key, c in h.prompt.constraints.items():
        ctx[key] = _fmt_num(c.value)
    for t in h.tools:
        ctx[f"tool.{t.key}"] = t.name
    for s in h.skills:
        ctx[f"skill.{s.key}"] = s.name
    ctx["skill_loader"] = h.skill_loader.name
    if extra:
        ctx.update(extra)
    return ctx


def fill_template(text: str, ctx: dict[str, Any]) -> str:
    """Substitute ``{{ name }}`` occurrences from ``ctx``; unknown names are left as they are."""
    if "{{" not in text:
        return text

    def sub(m: re.Match[str]) -> str:
        v = ctx.get(m.group(1))
        return m.group(0) if v is None else str(v)

    return TEMPLATE_RE.sub(sub, text)


def skill_catalog_line(description: str, name: str) -> str:
    """One skill as the catalog lists it (after its bullet), description before name.

    >>> skill_catalog_line("tell a viewer where their order is", "order_help")
    'tell a viewer where their order is : order_help'
    """
    return f"{description} : {name}"


def render_skill_catalog(h: Harness) -> str:
    """One line per skill, description before name (what a small model reads best)."""
    return "\n".join(f"- {skill_catalog_line(s.description, s.name)}" for s in h.skills)


def render_system_prompt(h: Harness, ctx: dict[str, Any] | None = None) -> str:
    ctx = ctx if ctx is not None else template_context(h)
    parts = [fill_template(b.text, ctx).strip() for b in h.prompt.blocks]
    if h.skills:
        parts.append(
            f"Skills (call {h.skill_loader.name} with the skill name before answering):\n" + render_skill_catalog(h)
        )
    return "\n\n".join(p for p in parts if p)


def skill_loader_spec(h: Harness) -> dict[str, Any]:
    properties: dict[str, Any] = {"name": {"type": "string", "enum": [s.name for s in h.skills]}}
    if any(s.files for s in h.skills):  # only then: a harness without skill files renders as it always did
        properties["file"] = {
            "type": "string",
            "description": "optional: one of the files the loaded skill lists, to read it instead of the rules",
        }
    return {
        "type": "function",
        "function": {
            "name": h.skill_loader.name,
            "description": h.skill_loader.description,
            "parameters": {"type": "object", "properties": properties, "required": ["name"]},
        },
    }


def render_tools(h: Harness) -> list[dict[str, Any]]:
    """OpenAI tool specs: the skill loader first, then the tools in harness order.

    The ``parameters`` objects are shared with the harness, not copied: treat them as read-only.
    """
    specs = [skill_loader_spec(h)] if h.skills else []
    for t in h.tools:
        specs.append(
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
        )
    return specs


def render_harness(h: Harness) -> RenderedHarness:
    """The system prompt and tool specs of ``h``, with the surface -> key maps."""
    tool_keys = {t.name: t.key for t in h.tools}
    if h.skills:
        tool_keys[h.skill_loader.name] = h.skill_loader.key
    return RenderedHarness(
        system_prompt=render_system_prompt(h),
        tools=render_tools(h),
        tool_key_by_name=tool_keys,
        skill_key_by_name={s.name: s.key for s in h.skills},
        loader_name=h.skill_loader.name,
    )


def render_skill(h: Harness, skill: Skill) -> str:
    """The text the runtime returns when the model loads ``skill``: its rules and its tools."""
    ctx = template_context(h)
    lines = [f"{h.hooks.message.skill_header}: {skill.name}"]
    for i, r in enumerate(skill.rules, 1):
        lines.append(f"{i}. {fill_template(r.text, ctx)}")
    if skill.tools:
        names = []
        for key in skill.tools:
            try:
                names.append(h.tool(key).name)
            except KeyError:
                continue
        lines.append("Tools: " + ", ".join(names))
    if skill.files:
        lines.append(f"Files (call {h.skill_loader.name} with name and file to read one): " + ", ".join(skill.files))
    return "\n".join(lines)


def _fmt_num(v: int | float) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
