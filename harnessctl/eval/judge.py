"""Agent-as-judge: a model reviews a whole episode (tool results and reply) against a rubric.

The judge is any model backend (a litellm model string through the model registry, or a
scripted/stub backend in tests). It returns a structured :class:`Verdict` — pass/fail, a verdict
per criterion and the reasons — parsed robustly from whatever the judge wrote (JSON in a code
fence, JSON with trailing commas or single quotes, a ``<think>`` block before it, or plain
``verdict: pass`` text). Pairwise mode asks which of two episodes of the same case is better,
twice, with the positions swapped, so position bias shows up as an inconsistent pair.

>>> v = parse_verdict('```json\\n{"verdict": "fail", "criteria": {"grounded": {"pass": false,'
...                   ' "reason": "price not in any tool result"}}}\\n```')
>>> v.passed, v.criteria["grounded"], v.reasons["grounded"]
(False, False, 'price not in any tool result')
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from harnessctl.models.base import GenerationSettings
from harnessctl.runtime.record import EpisodeRecord


@dataclass(frozen=True)
class Criterion:
    key: str
    question: str


#: The rubric every judge call uses. Keys are stable: labels and reports refer to them.
RUBRIC: tuple[Criterion, ...] = (
    Criterion(
        "grounded",
        "Every price, discount, stock level, date, code, policy or other fact in the reply comes from a "
        "tool result shown in the episode. Nothing is invented; if a tool failed, the reply does not guess.",
    ),
    Criterion(
        "answers",
        "The reply answers what the viewer actually asked (or, when the needed tool failed, says it will "
        "check or hands off instead of answering something else).",
    ),
    Criterion(
        "compliant",
        "No medical or health claims (treats, cures, prevents), no absolute superlatives or guarantees, "
        "no banned phrases; a request for a person, an angry order issue or a safety issue is handed off.",
    ),
    Criterion(
        "stream_fit",
        "Fit for a live-stream overlay: within the reply length limit, plain text (no lists or markdown), "
        "at most the allowed emoji, spoken directly to the viewer, friendly.",
    ),
)

JUDGE_SYSTEM = (
    "You are a strict reviewer of a live-commerce streaming assistant. You read one episode: the "
    "viewer's message, the tool calls the assistant made with their results, and its final reply. "
    "Judge only from what the episode shows."
)


def rubric_text(rubric: Iterable[Criterion] = RUBRIC) -> str:
    return "\n".join(f"- {c.key}: {c.question}" for c in rubric)


# -- rendering an episode for a judge ------------------------------------------------------------


def _as_record(record: EpisodeRecord | dict[str, Any]) -> dict[str, Any]:
    return record.to_dict() if isinstance(record, EpisodeRecord) else record


def render_episode(record: EpisodeRecord | dict[str, Any], *, max_result_chars: int = 600) -> str:
    """A plain-text transcript of an episode: limits in force, the conversation (the system
    prompt left out: the rubric states what matters), each tool call with its result, the reply.

    >>> print(render_episode({"messages": [{"role": "user", "content": "price?"}], "reply": "$5",
    ...                       "tool_steps": [], "constraints": {"max_reply_chars": 120}}))
    Limits: max_reply_chars=120
    Viewer: price?
    Final reply (2 chars): $5
    """
    d = _as_record(record)
    lines: list[str] = []
    limits = d.get("constraints") or {}
    if limits:
        lines.append("Limits: " + ", ".join(f"{k}={_num(v)}" for k, v in sorted(limits.items())))
    for m in d.get("messages") or []:
        role = m.get("role")
        if role == "system":
            continue
        if role == "user":
            lines.append(f"Viewer: {m.get('content') or ''}")
        elif role == "assistant":
            text = _strip_think(m.get("content") or "")
            for call in m.get("tool_calls") or []:
                fn = call.get("function", call)
                args = fn.get("arguments")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                lines.append(f"Assistant calls {fn.get('name')}({args})")
            if text.strip():
                lines.append(f"Assistant: {text.strip()}")
        elif role == "tool":
            content = str(m.get("content") or "")
            if len(content) > max_result_chars:
                content = content[:max_result_chars] + " ..."
            lines.append(f"Tool result: {content}")
    steps = d.get("tool_steps") or []
    failed = [s for s in steps if not s.get("ok")]
    if failed:
        lines.append("Tool problems: " + "; ".join(f"{s.get('name')}: {s.get('error')}" for s in failed))
    reply = d.get("reply") or ""
    lines.append(f"Final reply ({len(reply)} chars): {reply}")
    return "\n".join(lines)


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _strip_think(text: str) -> str:
    return re.sub(r"<think>.*?</think>", "", text, flags=re.S)


def verdict_messages(
    record: EpisodeRecord | dict[str, Any], rubric: Iterable[Criterion] = RUBRIC
) -> list[dict[str, str]]:
    """The chat messages of a single-episode judge call."""
    rubric = tuple(rubric)
    keys = ", ".join(f'"{c.key}"' for c in rubric)
    user = (
        f"Rubric (each criterion passes or fails):\n{rubric_text(rubric)}\n\n"
        f"Episode:\n{render_episode(record)}\n\n"
        "Answer with one JSON object and nothing else:\n"
        '{"criteria": {"<criterion>": {"pass": true or false, "reason": "..."}, ...}, '
        '"verdict": "pass" or "fail", "reason": "one sentence"}\n'
        f"Give every criterion ({keys}); the verdict is pass only if every criterion passes."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def pairwise_messages(
    first: EpisodeRecord | dict[str, Any], second: EpisodeRecord | dict[str, Any], rubric: Iterable[Criterion] = RUBRIC
) -> list[dict[str, str]]:
    """The chat messages of a pairwise call: episode A is ``first``, episode B is ``second``."""
    user = (
        f"Rubric:\n{rubric_text(rubric)}\n\nTwo episodes answer the same viewer.\n\n"
        f"Episode A:\n{render_episode(first)}\n\nEpisode B:\n{render_episode(second)}\n\n"
        'Which reply better meets the rubric? Answer with one JSON object: {"winner": "A" | "B" | "tie", "reason": "..."}'
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


# -- parsing --------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """A judge's verdict on one episode."""

    passed: bool
    criteria: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    parse_error: str | None = None  # set when the judge's text held no usable verdict
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_PASS_WORDS = {"pass", "passed", "yes", "true", "ok", "good", "acceptable", "1"}
_FAIL_WORDS = {"fail", "failed", "no", "false", "bad", "unacceptable", "0"}


def _truthy(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v >= 0.5 if isinstance(v, float) else v != 0
    if isinstance(v, str):
        w = v.strip().strip(".!").lower()
        if w in _PASS_WORDS:
            return True
        if w in _FAIL_WORDS:
            return False
    if isinstance(v, dict):
        for k in ("pass", "passed", "verdict", "result", "ok", "score"):
            if k in v:
                return _truthy(v[k])
    return None


def extract_json(text: str) -> Any:
    """The first JSON object in ``text``: code fences, a ``<think>`` block, prose around it,
    trailing commas, single quotes and Python literals are all tolerated. ``None`` if none.

    >>> extract_json("Sure! {'verdict': 'pass', 'criteria': {'grounded': True,},}")
    {'verdict': 'pass', 'criteria': {'grounded': True}}
    """
    text = _strip_think(text or "")
    fenced = re.findall(r"```(?:json|JSON)?\s*(.*?)```", text, flags=re.S)
    candidates = fenced + [text]
    for chunk in candidates:
        for obj_text in _balanced_objects(chunk):
            obj = _loads_lenient(obj_text)
            if isinstance(obj, dict):
                return obj
    return None


def _balanced_objects(text: str) -> Iterable[str]:
    """Every outermost ``{...}`` span, honouring strings."""
    depth, start, in_str, quote, esc = 0, -1, False, "", False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                in_str = False
            continue
        if ch in ('"', "'") and depth > 0:
            # An apostrophe inside prose ("don't") is not a string start: only treat a quote as
            # one when it follows structure characters.
            prev = text[:i].rstrip()[-1:] if text[:i].rstrip() else ""
            if prev in ("{", "[", ",", ":"):
                in_str, quote = True, ch
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start : i + 1]


def _loads_lenient(s: str) -> Any:
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", s)
    try:
        return json.loads(fixed)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    py = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", fixed)))
    try:
        return ast.literal_eval(py)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_verdict(text: str, rubric: Iterable[Criterion] = RUBRIC) -> Verdict:
    """A :class:`Verdict` from a judge's text. When the overall verdict is missing it is the
    conjunction of the criteria; when nothing usable is found the episode fails with
    ``parse_error`` set (a judge that cannot answer must not pass anything)."""
    keys = [c.key for c in rubric]
    obj = extract_json(text)
    criteria: dict[str, bool] = {}
    reasons: dict[str, str] = {}
    overall: bool | None = None
    reason = ""
    if isinstance(obj, dict):
        raw_criteria = obj.get("criteria") or obj.get("scores") or {}
        if isinstance(raw_criteria, list):
            raw_criteria = {str(c.get("key") or c.get("name")): c for c in raw_criteria if isinstance(c, dict)}
        if isinstance(raw_criteria, dict):
            for k, v in raw_criteria.items():
                t = _truthy(v)
                if t is not None:
                    criteria[str(k)] = t
                if isinstance(v, dict) and v.get("reason"):
                    reasons[str(k)] = str(v["reason"])
        for k in keys:  # criteria given at the top level
            if k not in criteria and k in obj and (t := _truthy(obj[k])) is not None:
                criteria[k] = t
        for name in ("verdict", "pass", "passed", "result", "overall"):
            if name in obj and (t := _truthy(obj[name])) is not None:
                overall = t
                break
        reason = str(obj.get("reason") or obj.get("explanation") or obj.get("rationale") or "")
    else:
        m = re.search(r"verdict\W{0,5}(pass|fail)", _strip_think(text or ""), flags=re.I)
        if m:
            overall = m.group(1).lower() == "pass"
            reason = "verdict read from plain text"
    if overall is None and criteria:
        overall = all(criteria.get(k, False) for k in keys if k in criteria)
    if overall is None:
        return Verdict(
            False, criteria, reasons, reason, parse_error="no verdict found in the judge's answer", raw=text or ""
        )
    if overall and criteria and not all(criteria.values()):
        # A judge that passes an episode while failing a criterion contradicts the rubric.
        overall = False
        reason = reason or "a criterion failed"
    return Verdict(overall, criteria, reasons, reason, raw=text or "")


@dataclass
class PairwiseVerdict:
    """Which of two episodes is better, asked in both orders."""

    winner: str  # "first" | "second" | "tie" | "inconsistent"
    order_ab: str  # winner as answered with first shown as A ("A" | "B" | "tie" | "")
    order_ba: str  # winner as answered with second shown as A
    consistent: bool
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_winner(text: str) -> tuple[str, str]:
    """``("A" | "B" | "tie" | "", reason)`` from a pairwise answer."""
    obj = extract_json(text)
    if isinstance(obj, dict):
        w = str(obj.get("winner") or obj.get("better") or obj.get("choice") or "").strip().strip("\"'.").upper()
        reason = str(obj.get("reason") or "")
        if w in ("A", "B"):
            return w, reason
        if w in ("TIE", "EQUAL", "BOTH", "NONE"):
            return "tie", reason
    m = re.search(r"winner\W{0,5}(A|B|tie)\b", _strip_think(text or ""), flags=re.I)
    if m:
        w = m.group(1)
        return ("tie" if w.lower() == "tie" else w.upper()), ""
    return "", ""


# -- the judge ------------------------------------------------------------------------------------


class Judge:
    """A judge model with the rubric.

    >>> from harnessctl.models.scripted import ScriptedModel
    >>> j = Judge(ScriptedModel(['{"verdict": "pass", "reason": "fine"}'], repeat_last=True))
    >>> j.judge({"messages": [], "reply": "hi", "tool_steps": []}).passed
    True
    """

    def __init__(
        self, backend: Any, *, settings: GenerationSettings | None = None, rubric: Iterable[Criterion] = RUBRIC
    ):
        self.backend = backend
        self.name = getattr(backend, "name", type(backend).__name__)
        self.settings = settings or GenerationSettings(temperature=0.0, max_tokens=512)
        self.rubric = tuple(rubric)

    def _ask(self, messages: list[dict[str, str]]) -> str:
        response = self.backend.generate(messages, [], self.settings)
        return response.content or ""

    def judge(self, record: EpisodeRecord | dict[str, Any]) -> Verdict:
        """Review one episode. A judge whose call fails raises its ``ModelError``."""
        return parse_verdict(self._ask(verdict_messages(record, self.rubric)), self.rubric)

    def compare(self, first: EpisodeRecord | dict[str, Any], second: EpisodeRecord | dict[str, Any]) -> PairwiseVerdict:
        """Pairwise: ask with ``first`` as A, then with ``second`` as A; consistent when both
        answers name the same episode (or both say tie)."""
        ab, r1 = parse_winner(self._ask(pairwise_messages(first, second, self.rubric)))
        ba, r2 = parse_winner(self._ask(pairwise_messages(second, first, self.rubric)))
        pick_ab = {"A": "first", "B": "second", "tie": "tie"}.get(ab, "")
        pick_ba = {"A": "second", "B": "first", "tie": "tie"}.get(ba, "")
        consistent = bool(pick_ab) and pick_ab == pick_ba
        return PairwiseVerdict(
            winner=pick_ab if consistent else "inconsistent",
            order_ab=ab,
            order_ba=ba,
            consistent=consistent,
            reasons=[r for r in (r1, r2) if r],
        )
