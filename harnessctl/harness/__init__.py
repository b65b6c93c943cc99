"""The harness library: data model, load/save, validate, render, semantic diff, git store.

>>> from harnessctl.harness import load_harness, render_harness
>>> h = load_harness("harnesses/livecommerce")        # doctest: +SKIP
>>> render_harness(h).system_prompt[:20]               # doctest: +SKIP
'You are Mia, the hos'
"""

from .errors import HarnessError, Issue
from .loader import build_harness, is_harness_dir, load_harness, read_documents
from .model import (
    Constraint,
    Guard,
    Harness,
    Hooks,
    MessageHook,
    Prompt,
    PromptBlock,
    RetryHook,
    Rule,
    Skill,
    SkillLoader,
    Tool,
)
from .render import RenderedHarness, render_harness, render_skill, render_tools

__all__ = [
    "Constraint", "Guard", "Harness", "HarnessError", "Hooks", "Issue", "MessageHook", "Prompt",
    "PromptBlock", "RenderedHarness", "RetryHook", "Rule", "Skill", "SkillLoader", "Tool",
    "build_harness", "is_harness_dir", "load_harness", "read_documents", "render_harness",
    "render_skill", "render_tools",
]
