"""The agent runtime: the one loop that evaluation, data generation and RL run.

>>> from harnessctl.runtime import run_episode
>>> rec = run_episode(harness, case, model)            # doctest: +SKIP
>>> rec.termination, rec.skills_loaded, rec.reply      # doctest: +SKIP
"""

from .environment import (
    FunctionEnvironment,
    MalformedResult,
    ToolEnvironment,
    ToolError,
    ToolTimeout,
    environment_for,
)
from .guards import apply_guards, reply_char_limit
from .loop import Episode, ModelRequest, arun_episode, run_episode
from .messages import format_tool_result, parse_tool_content, viewer_message
from .record import EpisodeRecord, ModelStep, Termination, ToolStep

__all__ = [
    "Episode",
    "EpisodeRecord",
    "FunctionEnvironment",
    "MalformedResult",
    "ModelRequest",
    "ModelStep",
    "Termination",
    "ToolEnvironment",
    "ToolError",
    "ToolStep",
    "ToolTimeout",
    "apply_guards",
    "arun_episode",
    "environment_for",
    "format_tool_result",
    "parse_tool_content",
    "reply_char_limit",
    "run_episode",
    "viewer_message",
]
