"""The episode record: everything that happened while the agent answered one case.

It is the one currency of the project: the scorer, the judge, the RL reward, the eval runner and
the dataset writers all consume it, so it is plain data (dataclasses -> JSON).

>>> rec = EpisodeRecord(case_id="c1", harness="livecommerce")
>>> rec.to_dict()["termination"]
'reply'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

RECORD_SCHEMA_VERSION = 1


class Termination(str, Enum):
    """Why an episode ended."""

    REPLY = "reply"  # the model replied without a tool call
    MAX_TURNS = "max_turns"  # the turn budget ran out
    MAX_TOOL_CALLS = "max_tool_calls"  # the tool-call budget ran out
    MODEL_ERROR = "model_error"  # the model backend failed (after its retries)
    TIMEOUT = "timeout"  # the whole episode ran past its deadline


@dataclass
class ToolStep:
    """One executed (or refused) tool call, resolved from surface name to stable key."""

    name: str  # surface name the model used
    key: str | None  # stable key, None if the name is unknown to the harness
    backend: str | None
    arguments: dict[str, Any] | None
    valid: bool  # arguments parsed and matched the tool's JSON Schema
    ok: bool  # executed and returned a usable result
    error: str | None = None  # unknown_tool | invalid_call | tool_error | timeout | empty_result | budget
    result: Any = None
    attempt: int = 1
    latency_s: float = 0.0
    turn: int = 0


@dataclass
class ModelStep:
    """One model call with its timing and token counts."""

    turn: int
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    think_tokens: int = 0
    n_tool_calls: int = 0
    error: str | None = None
    #: Malformed tool-call text in this turn (the scorer counts them against tool rationality).
    parse_errors: list[str] = field(default_factory=list)


@dataclass
class EpisodeRecord:
    """What happened in one episode: messages, steps, the final reply and why it ended."""

    case_id: str
    harness: str
    harness_version: str | None = None
    variant_id: str | None = None
    model: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)  # OpenAI chat, system prompt first
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI tool specs the model saw
    model_steps: list[ModelStep] = field(default_factory=list)
    tool_steps: list[ToolStep] = field(default_factory=list)
    skills_loaded: list[str] = field(default_factory=list)  # skill keys, in order
    reply: str = ""
    raw_reply: str = ""  # the reply before guards (truncation/revision)
    guard_events: list[dict[str, Any]] = field(default_factory=list)
    termination: Termination = Termination.REPLY
    latency_s: float = 0.0  # the whole reply, wall clock
    #: Numeric constraints in force (after any perturbation), by key.
    constraints: dict[str, float] = field(default_factory=dict)
    #: Model turns' token ids, for trainers (None when the backend does not know them).
    turn_token_ids: list[dict[str, Any]] | None = None
    #: Phrases the harness's reply guards ban (scored under compliance).
    banned_phrases: list[str] = field(default_factory=list)
    #: The retry hook in force: ``{"max_attempts": 2, "on": ["tool_error", ...]}``.
    retry: dict[str, Any] = field(default_factory=dict)
    #: Skill key -> the tool keys it lists, for every skill of the harness in force.
    skill_tools: dict[str, list[str]] = field(default_factory=dict)
    schema_version: int = RECORD_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["termination"] = self.termination.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodeRecord:
        d = dict(d)
        d["termination"] = Termination(d.get("termination", "reply"))
        d["model_steps"] = [ModelStep(**s) for s in d.get("model_steps", [])]
        d["tool_steps"] = [ToolStep(**s) for s in d.get("tool_steps", [])]
        return cls(**d)
