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
    "Constraint",
    "Guard",
    "Harness",
    "HarnessError",
    "Hooks",
    "Issue",
    "MessageHook",
    "Prompt",
    "PromptBlock",
    "RenderedHarness",
    "RetryHook",
    "Rule",
    "Skill",
    "SkillLoader",
    "Tool",
    "build_harness",
    "is_harness_dir",
    "load_harness",
    "read_documents",
    "render_harness",
    "render_skill",
    "render_tools",
]

# Versions in git and the semantic diff.
from .diff import (  # noqa: E402
    Change,
    HarnessDiff,
    ParameterChange,
    WordSpan,
    compare_parameters,
    diff_harnesses,
    word_diff,
)
from .store import HarnessStore, LogEntry, ResolvedHarness, StoreError, Version, is_version_name  # noqa: E402

__all__ += [
    "Change",
    "HarnessDiff",
    "HarnessStore",
    "LogEntry",
    "ParameterChange",
    "ResolvedHarness",
    "StoreError",
    "Version",
    "WordSpan",
    "compare_parameters",
    "diff_harnesses",
    "is_version_name",
    "word_diff",
]

# Validation, the backend registry, saving and the starter harness.
from .backends import get_backend, known_backends, register_backend  # noqa: E402
from .check import HarnessCheck, check_harness_dir, validate_harness_dir  # noqa: E402
from .save import render_harness_files, save_harness  # noqa: E402
from .starter import write_starter  # noqa: E402
from .validate import validate_documents  # noqa: E402

__all__ += [
    "HarnessCheck",
    "check_harness_dir",
    "get_backend",
    "known_backends",
    "register_backend",
    "render_harness_files",
    "save_harness",
    "validate_documents",
    "validate_harness_dir",
    "write_starter",
]
