"""The oracle: a reference agent that answers a case as a perfect agent would, under any harness.

It knows the case — the intent and what the comment pins down (target product, region, order
number, variant, height) — and nothing else: it reads the harness it is given for the current
surface names (skill loader, skills, tools), the budgets and the hooks, and reads tool results
back from the tool messages (JSON or text form, any prefix). Each turn it decides from the
conversation so far:

1. load the intent's skill by its current name (the skills that cover its tools when the
   harness has no such skill, e.g. ``flash_sale`` under v1);
2. call the needed tools by their current names with valid arguments — independent calls in
   one turn, dependent ones (search, then details) in the next;
3. retry a failed call while the retry hook allows it (trigger in ``retry.on``, attempts left),
   within ``max_tool_calls`` and ``max_turns``;
4. reply from the tool results (:mod:`harnessctl.sim.compose`), within ``max_reply_chars``,
   ``max_emojis`` and the banned phrases; where a tool failed it says it will check.

It never reads the case's expected facts: the facts match because the reply is written from the
same data with the same formatting.

>>> model = OracleModel()
>>> rec = run_episode(harness, case, model)        # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harnessctl.harness.model import Harness
from harnessctl.harness.render import skill_catalog_line
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.types import ModelResponse, ToolCall
from harnessctl.runtime.guards import banned_phrases, reply_char_limit
from harnessctl.runtime.messages import is_viewer_message, parse_tool_content
from harnessctl.runtime.text import count_tokens
from harnessctl.sim.compose import Findings, choose_reply, compose
from harnessctl.sim.task import INTENT_SKILL, SKILL_FALLBACKS, retry_trigger, task_calls

# Which result goes where in :class:`Findings`, by tool key.
_FINDINGS_SLOT = {
    "product_details": "cards",
    "stock_check": "stock",
    "promotions": "promos",
    "return_policy": "returns",
}


@dataclass
class PlannedCall:
    tool: str  # tool key
    args: dict[str, Any]
    round: int = 1


class OracleModel:
    """The ``oracle`` model backend: bind it to a case with :meth:`for_episode`.

    ``think=True`` adds a short ``<think>`` note to each turn (within ``max_think_tokens``),
    for training data that shows reasoning of the allowed length. ``quote_skills=True`` opens each
    turn that loads skills with a ``<think>`` note quoting the catalog line of each skill it loads
    (``description : name``, as the system prompt lists it): the step from what the viewer wants
    to the name the harness gives it today, written out where a small model can copy it.
    """

    name = "oracle"
    #: The oracle plans from the case's answer key: the runtime binds it to the full case.
    reads_answer_key = True
    #: Cheaper to run than to look up: the eval cache skips it.
    cacheable = False

    def __init__(self, *, think: bool = False, quote_skills: bool = False) -> None:
        self.think = think
        self.quote_skills = quote_skills

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        if harness is None:
            raise ModelError("the oracle answers under a harness: for_episode(case, harness) needs one")
        return OraclePolicy(case, harness, think=self.think, quote_skills=self.quote_skills)

    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        raise ModelError("the oracle answers a known case: call for_episode(case, harness) and use what it returns")


class OracleBlindModel(OracleModel):
    """The ``oracle-blind`` model backend: the oracle's task knowledge, but it sees only the
    surface of one reference harness (the shipped one) whatever harness it answers under — the
    ceiling of a model that memorised its training harness. It calls the reference's tool and
    skill names and fits its replies to the reference's constraints and banned phrases; the
    runtime still runs the harness in force, so a renamed tool is an unknown tool to it and a
    tightened constraint is one its replies break.

    >>> blind = OracleBlindModel(load_harness("harnesses/livecommerce"))   # doctest: +SKIP
    >>> run_episode(variant, case, blind.for_episode(case, variant))      # doctest: +SKIP
    """

    name = "oracle-blind"
    #: Its replies are kept in the eval cache, under the surface it memorised (:attr:`cache_identity`).
    cacheable = True

    def __init__(self, reference: Harness, *, think: bool = False, memorised: dict[str, Any] | None = None) -> None:
        super().__init__(think=think)
        self.reference = reference
        #: Which surface it memorised (``{harness, path, rev, label, commit, version}``), for records.
        self.memorised = memorised or {"harness": reference.name, "label": reference.name}

    @property
    def cache_identity(self) -> str:
        """Its full model string, folder and revision, and the commit the revision named when it
        was resolved: references that memorised different surfaces (``oracle-blind@v1`` and
        ``@v3``, or a tag moved since) never share cached replies.

        >>> from harnessctl.harness import load_harness
        >>> blind = OracleBlindModel(load_harness("harnesses/livecommerce"), memorised={"path": "h", "rev": "v1", "commit": "e8142c4"})
        >>> blind.cache_identity
        'oracle-blind:h@v1#e8142c4'
        """
        m = self.memorised
        spec = f"{self.name}:{m.get('path') or m.get('harness')}" + (f"@{m['rev']}" if m.get("rev") else "")
        return spec + (f"#{m['commit']}" if m.get("commit") else "")

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return _BlindPolicy(case, self.reference, think=self.think)


class OraclePolicy:
    """The oracle bound to one case and one harness (stateless between turns: every decision
    is read off the messages, so replaying a conversation gives the same next step)."""

    name = "oracle"
    reads_answer_key = True
    cacheable = False

    def __init__(self, case: Any, harness: Harness, *, think: bool = False, quote_skills: bool = False) -> None:
        self.case = case
        self.h = harness
        self.think = think
        self.quote_skills = quote_skills
        self.slots = _slots_of(case)
        self.intent = str(case.intent)
        self.skills = _skills_for(self.intent, harness)
        self.calls = _plan(self.intent, self.slots, case, harness, self.skills)
        self.max_turns = int(harness.constraint("max_turns", 6) or 6)
        self.max_tool_calls = int(harness.constraint("max_tool_calls", 8) or 8)
        self.limit = reply_char_limit(harness)
        emojis = harness.constraint("max_emojis")
        self.max_emojis = int(emojis) if emojis is not None else None
        self.banned = banned_phrases(harness)
        self.think_budget = int(harness.constraint("max_think_tokens", 0) or 0)
        self._names = {t.key: t.name for t in harness.tools}
        self._keys = {t.name: t.key for t in harness.tools}
        self._keys[harness.skill_loader.name] = harness.skill_loader.key

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return OraclePolicy(case, harness, think=self.think, quote_skills=self.quote_skills)

    # The decision ---------------------------------------------------------------------------
    def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: GenerationSettings
    ) -> ModelResponse:
        state = self._read(messages)
        turns_left = self.max_turns - state.turns  # this turn included
        calls_left = self.max_tool_calls - state.n_calls
        batch: list[tuple[str, dict[str, Any]]] = []  # (tool name, args)
        if turns_left > 1 and calls_left > 0:
            batch = self._next_calls(state, turns_left, calls_left)
        if batch:
            calls = [
                ToolCall(name=n, arguments=a, id=f"call_{state.turns + 1}_{i}", raw_arguments=json.dumps(a))
                for i, (n, a) in enumerate(batch)
            ]
            content = self._think(f"{self.intent}: call " + ", ".join(n for n, _ in batch))
            if self.quote_skills:
                content = self._quote_skills(batch) or content
            return self._response(messages, content, calls)
        found = self._findings(state)
        context = {
            "handle": (self.case.context.viewer or {}).get("handle"),
            "on_screen_id": self.case.context.product_id,
            "on_screen_name": getattr(self.case.context, "product_name", None),
        }
        reply = choose_reply(
            compose(self.intent, self.slots, context, found),
            limit=self.limit,
            max_emojis=self.max_emojis,
            banned=self.banned,
        )
        return self._response(messages, self._think(f"{self.intent}: reply") + reply, [])

    def _next_calls(self, state: _State, turns_left: int, calls_left: int) -> list[tuple[str, dict[str, Any]]]:
        loader = self.h.skill_loader.name
        batch: list[tuple[str, dict[str, Any]]] = []
        to_load = [k for k in self.skills if k not in state.skills_loaded and k not in state.skills_tried]
        if to_load:
            batch = [(loader, {"name": self.h.skill(k).name}) for k in to_load]
            if turns_left > 2:
                return batch[:calls_left]
            # Two turns left (this one and the reply): load and call in the same turn.
        status = [self._status(c, state) for c in self.calls]
        for call, st in zip(self.calls, status):
            if st not in ("pending", "retry"):
                continue
            earlier = [s2 for c2, s2 in zip(self.calls, status) if c2.round < call.round]
            # A later round waits for the earlier one; if an earlier call failed for good, what
            # this call needs never came back and it is not made.
            if any(s2 in ("pending", "retry", "failed") for s2 in earlier):
                continue
            if to_load and call.round > 1:
                continue
            batch.append((self._names[call.tool], call.args))
        return batch[:calls_left]

    def _status(self, call: PlannedCall, state: _State) -> str:
        sig = (call.tool, _canon(call.args))
        attempts = state.attempts.get(sig, [])
        if not attempts:
            return "pending"
        if any(err is None for err in attempts):
            return "done"
        last = attempts[-1]
        retry = self.h.hooks.retry
        trigger = retry_trigger(last)
        if trigger in retry.on and len(attempts) < max(1, int(retry.max_attempts)):
            return "retry"
        return "failed"

    # Reading the conversation ---------------------------------------------------------------
    def _read(self, messages: list[dict[str, Any]]) -> _State:
        start = max((i for i, m in enumerate(messages) if is_viewer_message(m)), default=len(messages) - 1)
        state = _State()
        pending: dict[str, tuple[str | None, dict[str, Any]]] = {}
        hook = self.h.hooks.message
        for m in messages[start + 1 :]:
            role = m.get("role")
            if role == "assistant":
                state.turns += 1
                for tc in m.get("tool_calls") or []:
                    fn = tc.get("function", {})
                    args = fn.get("arguments")
                    if isinstance(args, str):
                        try:
                            args = json.loads(args) if args else {}
                        except json.JSONDecodeError:
                            args = None
                    state.n_calls += 1
                    pending[str(tc.get("id"))] = (
                        self._keys.get(fn.get("name", "")),
                        args if isinstance(args, dict) else {},
                    )
            elif role == "tool":
                key, args = pending.get(str(m.get("tool_call_id")), (None, {}))
                if key is None:
                    continue
                data = parse_tool_content(str(m.get("content") or ""), hook)
                error = data.get("error") if isinstance(data, dict) and set(data) == {"error", "message"} else None
                if key == self.h.skill_loader.key:
                    skill = self.h.skill_by_name(str(args.get("name", "")))
                    if skill is not None:
                        state.skills_tried.add(skill.key)
                        if error is None:
                            state.skills_loaded.add(skill.key)
                    continue
                state.attempts.setdefault((key, _canon(args)), []).append(error)
                if error is None:
                    state.results.append((key, args, data))
        return state

    def _findings(self, state: _State) -> Findings:
        found = Findings()
        for key, args, data in state.results:
            if not isinstance(data, dict):
                continue
            slot = _FINDINGS_SLOT.get(key)
            if slot is not None:
                pid = str(data.get("id") or data.get("product_id") or args.get("product_id") or "").upper()
                getattr(found, slot)[pid] = data
            elif key == "shipping_estimate":
                found.shipping = data
            elif key == "order_status":
                found.order = data
            elif key == "human_handoff":
                found.ticket = data
            elif key == "product_search":
                found.search = data
        return found

    # Output ---------------------------------------------------------------------------------
    def _think(self, note: str) -> str:
        if not self.think or self.think_budget <= 0:
            return ""
        words = note.split()
        while words and count_tokens(" ".join(words)) > self.think_budget:
            words.pop()
        return f"<think>{' '.join(words)}</think>" if words else ""

    def _quote_skills(self, batch: list[tuple[str, dict[str, Any]]]) -> str:
        """The catalog lines of the skills ``batch`` loads, as one ``<think>`` note: "" when it
        loads none, or the whole note does not fit the harness's ``max_think_tokens`` (a quote cut
        before the name would teach a wrong copy)."""
        loader = self.h.skill_loader.name
        by_name = {s.name: s for s in self.h.skills}
        lines = [
            skill_catalog_line(by_name[a["name"]].description, a["name"])
            for n, a in batch
            if n == loader and a.get("name") in by_name
        ]
        note = "; ".join(lines)
        if not lines or count_tokens(note) > self.think_budget:
            return ""
        return f"<think>{note}</think>"

    def _response(self, messages: list[dict[str, Any]], content: str, calls: list[ToolCall]) -> ModelResponse:
        out_text = content + "".join(c.raw_arguments + c.name for c in calls)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            prompt_tokens=sum(count_tokens(str(m.get("content") or "")) for m in messages),
            completion_tokens=max(1, count_tokens(out_text)),
        )


@dataclass
class _State:
    turns: int = 0
    n_calls: int = 0

    def __post_init__(self) -> None:
        self.skills_loaded: set[str] = set()
        self.skills_tried: set[str] = set()
        self.attempts: dict[tuple[str, str], list[str | None]] = {}
        self.results: list[tuple[str, dict[str, Any], Any]] = []


# -- planning ----------------------------------------------------------------------------------


def _skills_for(intent: str, h: Harness) -> list[str]:
    keys = {s.key for s in h.skills}
    primary = INTENT_SKILL.get(intent)
    if primary in keys:
        return [primary]
    return [k for k in SKILL_FALLBACKS.get(intent, []) if k in keys]


def _plan(intent: str, slots: dict[str, Any], case: Any, h: Harness, skills: list[str]) -> list[PlannedCall]:
    """The needed calls of the task spec (:func:`~harnessctl.sim.task.task_calls`), with the
    arguments a correct call sends — only tools the harness has, and under a loaded skill only
    the tools the skills list."""
    calls = [
        PlannedCall(c.tool, dict(c.args), c.round) for c in task_calls(intent, slots, case.query or "") if c.required
    ]
    keys = {t.key for t in h.tools}
    allowed = set().union(*(h.skill(k).tools for k in skills)) if skills else keys
    return [c for c in calls if c.tool in keys and c.tool in allowed and all(v is not None for v in c.args.values())]


def _slots_of(case: Any) -> dict[str, Any]:
    """The case's slots, completed from its context and expected calls for cases made
    elsewhere (a suite file written before slots existed)."""
    slots = dict(getattr(case, "slots", None) or {})
    ctx = case.context
    slots.setdefault("product_id", ctx.product_id)
    details = [c for c in case.expect.calls if c.tool == "product_details"]
    if case.intent == "comparison" and "other_id" not in slots and len(details) >= 2:
        slots["other_id"] = details[1].args.get("product_id")
    for c in case.expect.calls:
        for k in ("order_id", "variant", "region"):
            if k not in slots and k in c.args:
                v = c.args[k]
                slots[k] = v[0] if isinstance(v, list) and v else v
        if c.tool == "human_handoff" and "urgency" not in slots:
            u = c.args.get("urgency")
            slots["urgency"] = "high" if u == ["high"] or u == "high" else "normal"
    if "region" not in slots and (ctx.viewer or {}).get("region"):
        slots["region"] = ctx.viewer["region"]
    if "height_cm" not in slots:
        m = re.search(r"(\d{3})\s*cm", case.query or "")
        if m:
            slots["height_cm"] = int(m.group(1))
    return slots


def _canon(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)


class _BlindPolicy(OraclePolicy):
    """An oracle policy that stays bound to its reference harness when rebound to a case."""

    name = "oracle-blind"
    cacheable = True

    def for_episode(self, case: Any, harness: Any) -> OraclePolicy:
        return _BlindPolicy(case, self.h, think=self.think, quote_skills=self.quote_skills)
