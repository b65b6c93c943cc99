"""A model that plays a fixed script: for tests, demos and benchmarks.

Each step of the script is a :class:`ModelResponse`, a plain string (parsed like model text, so
``<tool_call>`` blocks become calls), or a function of ``(messages, tools)`` returning either.
Every episode starts the script from its first step (``for_episode`` returns a fresh copy);
direct ``generate`` calls consume it in order. Thread-safe.

>>> m = ScriptedModel([
...     '<tool_call>{"name": "load_skill", "arguments": {"name": "explain_price"}}</tool_call>',
...     "It is $19.90 live!",
... ])
>>> m.generate([], [], GenerationSettings()).tool_calls[0].name
'load_skill'
>>> m.generate([], [], GenerationSettings()).content
'It is $19.90 live!'
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from typing import Any

from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.toolcall_text import parse_tool_calls
from harnessctl.models.types import ModelResponse

ScriptStep = ModelResponse | str | Callable[[list[dict[str, Any]], list[dict[str, Any]]], ModelResponse | str]


class ScriptedModel:
    """Replays ``script`` one step per call; ``repeat_last`` keeps answering with the last step
    (a model that never stops calling tools), otherwise running past the end is a
    :class:`ModelError`."""

    def __init__(self, script: Sequence[ScriptStep], *, name: str = "scripted", repeat_last: bool = False):
        if not script:
            raise ValueError("a ScriptedModel needs at least one step")
        self.name = name
        self.script = list(script)
        self.repeat_last = repeat_last
        self.calls = 0  # how many responses this instance has given
        self._lock = threading.Lock()

    def for_episode(self, case: Any, harness: Any) -> ScriptedModel:
        return ScriptedModel(self.script, name=self.name, repeat_last=self.repeat_last)

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        with self._lock:
            index = self.calls
            if index >= len(self.script):
                if not self.repeat_last:
                    raise ModelError(
                        f"{self.name}: the script has only {len(self.script)} steps (call {index + 1} asked)"
                    )
                index = len(self.script) - 1
            self.calls += 1
        step = self.script[index]
        if callable(step) and not isinstance(step, ModelResponse):
            step = step(messages, tools)
        return _as_response(step)


def _as_response(step: ModelResponse | str) -> ModelResponse:
    if isinstance(step, ModelResponse):
        return copy.deepcopy(step)
    content, calls, errors = parse_tool_calls(step)
    return ModelResponse(
        content=content,
        tool_calls=calls,
        finish_reason="tool_calls" if calls else "stop",
        completion_tokens=max(1, len(step.split())),
        parse_errors=errors,
    )
