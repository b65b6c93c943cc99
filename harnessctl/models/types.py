"""What a model backend returns: one turn (:class:`ModelResponse`) and its tool calls (:class:`ToolCall`).

These types describe the model interface, so they live with the models; the runtime, the
simulator's oracle and the trainer import them from here (``harnessctl.runtime.record`` re-exports
them for older imports).

>>> r = ModelResponse(content="", tool_calls=[ToolCall(name="check_stock", arguments={"product_id": "P001"})])
>>> r.tool_calls[0].name, r.finish_reason
('check_stock', 'stop')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    """A tool call as the model made it (by surface name). ``arguments`` is the parsed JSON
    object, or ``None`` when the model's argument text did not parse (kept in ``raw_arguments``)."""

    name: str
    arguments: dict[str, Any] | None
    id: str = ""
    raw_arguments: str = ""


@dataclass
class ModelResponse:
    """One model turn. ``prompt_token_ids``/``completion_token_ids``/``logprobs`` are filled by
    backends that know them (a trainer's generate function does; RL needs them)."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    #: Malformed tool-call text found in the content (parsed out, recorded for scoring).
    parse_errors: list[str] = field(default_factory=list)
