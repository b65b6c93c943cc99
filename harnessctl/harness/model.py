"""The harness data model: plain dataclasses, one per harness element.

Every element has a stable ``key`` (its identity: never perturbed by augmentation, used by
scoring and by the semantic diff) and a *surface* (names, descriptions, wording, order): what
the model sees, what HSA perturbs and what the business edits every week.

>>> from harnessctl.harness import load_harness
>>> h = load_harness("harnesses/livecommerce")          # doctest: +SKIP
>>> h.tool("order_status").name                          # doctest: +SKIP
'track_order'
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1

#: Template variables a retry ``feedback_template`` may use.
RETRY_TEMPLATE_VARIABLES = ("tool", "error", "attempt", "max_attempts")
#: Reasons a retry hook can react to.
RETRY_TRIGGERS = ("tool_error", "timeout", "invalid_call", "empty_result")
#: The runtime's error for a failed call -> the ``hooks.retry.on`` trigger it answers to; the
#: runtime, the simulator's oracle and the scorer all read this one map. Errors not listed
#: (``partial`` results, ``budget`` refusals) trigger no retry.
ERROR_TRIGGERS = {
    "tool_error": "tool_error",
    "timeout": "timeout",
    "invalid_call": "invalid_call",
    "unknown_tool": "invalid_call",
    "empty_result": "empty_result",
}


@dataclass
class Rule:
    """One rule of a skill, e.g. ``{key: no_medical, text: "Never say it cures acne."}``."""

    key: str
    text: str


@dataclass
class Skill:
    """What to do for a kind of request. Loaded on demand through the skill-loading tool."""

    key: str
    name: str
    description: str
    rules: list[Rule] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # tool *keys*
    #: Markdown the rules sit in, one ``{{ rule }}`` slot per rule in order (an imported
    #: SKILL.md body); empty for skills written as YAML. Only export reads it.
    layout: str = ""
    #: Text files the skill loader serves on request, relative to ``skills/<key>/``.
    files: list[str] = field(default_factory=list)
    #: Files shipped with the skill that are never run or served (scripts), relative to ``skills/<key>/``.
    inert_files: list[str] = field(default_factory=list)
    #: Source fields the harness does not use (SKILL.md ``license``, ``metadata``, ...), kept for export.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Tool:
    """A function the model can call; ``backend`` binds it to an implementation by key."""

    key: str
    name: str
    description: str
    parameters: dict[str, Any]
    backend: str  # "" while unbound (an imported tool): the harness does not validate until it is bound
    timeout_s: float = 5.0
    #: Source fields the harness does not use (MCP ``title``, ``outputSchema``, ``annotations``), kept for export.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PromptBlock:
    """One ordered block of the system prompt. ``text`` may use ``{{ var }}`` templates."""

    key: str
    text: str


@dataclass
class Constraint:
    """A numeric constraint with its valid range, e.g. the maximum reply length."""

    key: str
    value: int | float
    min: int | float
    max: int | float
    description: str = ""


@dataclass
class Prompt:
    blocks: list[PromptBlock] = field(default_factory=list)
    constraints: dict[str, Constraint] = field(default_factory=dict)


@dataclass
class RetryHook:
    """How the runtime reacts to a failed tool call."""

    max_attempts: int = 2
    on: list[str] = field(default_factory=lambda: ["tool_error", "timeout", "invalid_call"])
    backoff_s: float = 0.0
    feedback_template: str = "The call to {{ tool }} failed ({{ error }}). Attempt {{ attempt }} of {{ max_attempts }}."


@dataclass
class MessageHook:
    """How tool results and skills are shown to the model."""

    tool_result_format: str = "json"  # json | text
    tool_result_prefix: str = ""
    skill_header: str = "Skill"


@dataclass
class Guard:
    """A declarative reply guard, e.g. ``{type: max_chars, constraint: max_reply_chars}``."""

    type: str  # max_chars | banned_phrases
    action: str = "truncate"  # truncate | revise | replace
    constraint: str | None = None
    limit: int | None = None
    phrases: list[str] = field(default_factory=list)
    replacement: str = ""


@dataclass
class Hooks:
    retry: RetryHook = field(default_factory=RetryHook)
    message: MessageHook = field(default_factory=MessageHook)
    guards: list[Guard] = field(default_factory=list)


@dataclass
class SkillLoader:
    """The surface of the skill-loading tool (its key is fixed: ``load_skill``)."""

    name: str = "load_skill"
    description: str = "Load the rules of a skill before you answer"
    key: str = "load_skill"


@dataclass
class Harness:
    """A whole harness: what the model sees and how the runtime behaves around it."""

    name: str
    description: str = ""
    version: str | None = None
    schema_version: int = SCHEMA_VERSION
    variables: dict[str, Any] = field(default_factory=dict)
    skill_loader: SkillLoader = field(default_factory=SkillLoader)
    prompt: Prompt = field(default_factory=Prompt)
    skills: list[Skill] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    hooks: Hooks = field(default_factory=Hooks)
    #: Folder the harness was loaded from (None for in-memory harnesses).
    root: str | None = None
    #: Relative file of each element, by ``"skill:<key>"`` / ``"tool:<key>"``, for messages.
    sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    # -- lookups by stable key ------------------------------------------------------------
    def skill(self, key: str) -> Skill:
        for s in self.skills:
            if s.key == key:
                return s
        raise KeyError(f"no skill with key {key!r}")

    def tool(self, key: str) -> Tool:
        for t in self.tools:
            if t.key == key:
                return t
        raise KeyError(f"no tool with key {key!r}")

    def constraint(self, key: str, default: float | None = None) -> float | None:
        c = self.prompt.constraints.get(key)
        return c.value if c is not None else default

    def tool_by_name(self, name: str) -> Tool | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def skill_by_name(self, name: str) -> Skill | None:
        for s in self.skills:
            if s.name == name:
                return s
        return None

    def copy(self) -> Harness:
        """A deep copy, safe to perturb (augmentation works on copies)."""
        return copy.deepcopy(self)
