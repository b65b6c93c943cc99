"""The agent loop: one viewer comment, answered by a model under a harness, recorded.

This is the one loop that evaluation, data generation and RL all run. The model call is a seam:
``model`` is anything with ``generate(messages, tools, settings) -> ModelResponse`` (and
optionally ``for_episode(case, harness)``), so a trainer drives the same loop with its own
generate function and gets each turn's token ids back in the record:

>>> class MyPolicy:                                   # a trainer's sampler
...     name = "policy"
...     def generate(self, messages, tools, settings):
...         ids = [1, 2, 3]                           # tokenizer(...) in real life
...         return ModelResponse(content="Hi!", prompt_token_ids=ids,
...                              completion_token_ids=[4, 5], logprobs=[-0.1, -0.2])
>>> rec = run_episode(harness, case, MyPolicy())     # doctest: +SKIP
>>> rec.turn_token_ids[0]["completion_token_ids"]    # doctest: +SKIP
[4, 5]

What one episode does, in order: render the harness (or take a pre-rendered one), build the
messages (system prompt, the case's short history, the viewer's comment with its context),
then per turn: call the model; read its tool calls (the OpenAI field, or Hermes
``<tool_call>`` text); resolve surface names to keys; validate arguments against the tool's
JSON Schema; load skills; run backends through the environment with the tool's timeout;
apply the retry hook (feedback template, max attempts) and the message hook (result format and
prefix); stop on a reply, applying the reply guards (a revise guard gets one more turn). Budgets
(``max_turns``, ``max_tool_calls``) and an optional wall-clock deadline bound the loop. Model
failures end the episode with :attr:`Termination.MODEL_ERROR`; nothing a model or a backend does
raises out of :func:`run_episode`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from harnessctl.harness.errors import HarnessError
from harnessctl.harness.model import ERROR_TRIGGERS, Harness
from harnessctl.harness.render import RenderedHarness, fill_template, render_harness, render_skill
from harnessctl.harness.skill_files import read_skill_file
from harnessctl.models.base import GenerationSettings, ModelError, agenerate, bind_model
from harnessctl.models.toolcall_text import parse_tool_calls
from harnessctl.models.types import ModelResponse, ToolCall
from harnessctl.runtime.environment import ToolEnvironment, ToolError, ToolTimeout, environment_for
from harnessctl.runtime.guards import apply_guards, banned_phrases, reply_char_limit
from harnessctl.runtime.messages import (
    format_tool_error,
    format_tool_result,
    history_messages,
    runtime_note,
    viewer_message,
)
from harnessctl.runtime.record import EpisodeRecord, ModelStep, Termination, ToolStep
from harnessctl.runtime.text import count_tokens, think_tokens, visible_text
from harnessctl.runtime.validation import check_arguments

#: Defaults when a harness does not set the budget constraints.
DEFAULT_MAX_TURNS = 6
DEFAULT_MAX_TOOL_CALLS = 8

StepCallback = Callable[[ModelStep | ToolStep], None]


def run_episode(
    harness: Harness,
    case: Any,
    model: Any,
    *,
    env: ToolEnvironment | None = None,
    settings: GenerationSettings | None = None,
    rendered: RenderedHarness | None = None,
    deadline_s: float | None = None,
    on_step: StepCallback | None = None,
) -> EpisodeRecord:
    """Answer ``case`` with ``model`` under ``harness`` and return what happened.

    ``env`` defaults to a fresh simulator world over the shipped catalog for the case (its
    fault plan included) — pass ``World(catalog=..., case=case)`` for an imported catalog;
    ``rendered`` skips re-rendering when the caller already has it; ``deadline_s`` bounds the
    whole episode's wall clock; ``on_step`` sees each model step and tool step as it ends.

    >>> from harnessctl.harness import load_harness
    >>> from harnessctl.sim import OracleModel, generate_cases
    >>> h = load_harness("harnesses/livecommerce")                   # doctest: +SKIP
    >>> rec = run_episode(h, generate_cases(1, seed=0)[0], OracleModel())   # doctest: +SKIP
    >>> rec.termination.value, rec.skills_loaded                        # doctest: +SKIP
    ('reply', ['price_promo'])
    """
    episode = _Episode(harness, case, model, env, settings, rendered, deadline_s, on_step)
    steps = episode.run()
    try:
        request = next(steps)
        while True:
            request = steps.send(_generate_sync(episode.policy, request))
    except StopIteration as stop:
        return stop.value


async def arun_episode(
    harness: Harness,
    case: Any,
    model: Any,
    *,
    env: ToolEnvironment | None = None,
    settings: GenerationSettings | None = None,
    rendered: RenderedHarness | None = None,
    deadline_s: float | None = None,
    on_step: StepCallback | None = None,
) -> EpisodeRecord:
    """:func:`run_episode` for concurrent evaluation: the model call is awaited
    (:func:`harnessctl.models.base.agenerate`), tool backends run inline.

    >>> recs = await asyncio.gather(*(arun_episode(h, c, model) for c in cases))   # doctest: +SKIP
    """
    episode = _Episode(harness, case, model, env, settings, rendered, deadline_s, on_step)
    steps = episode.run()
    try:
        request = next(steps)
        while True:
            request = steps.send(await _generate_async(episode.policy, request))
    except StopIteration as stop:
        return stop.value


class Episode:
    """The loop one step at a time, for a caller that makes the model call itself (a trainer
    batching generation, a server waiting on a client): :meth:`reset` gives the first
    :class:`ModelRequest`, :meth:`step` takes the model's response (or the exception it raised)
    and gives the next request or, at the end, the :class:`EpisodeRecord`.

    >>> ep = Episode(harness, case, env=case.environment())          # doctest: +SKIP
    >>> out = ep.reset()                                            # doctest: +SKIP
    >>> while not isinstance(out, EpisodeRecord):                   # doctest: +SKIP
    ...     out = ep.step(my_policy(out.messages, out.tools))
    >>> ep.record.termination                                       # doctest: +SKIP
    """

    def __init__(
        self,
        harness: Harness,
        case: Any,
        *,
        env: ToolEnvironment | None = None,
        settings: GenerationSettings | None = None,
        rendered: RenderedHarness | None = None,
        model_name: str = "policy",
        deadline_s: float | None = None,
        on_step: StepCallback | None = None,
    ) -> None:
        self._episode = _Episode(harness, case, None, env, settings, rendered, deadline_s, on_step)
        self._episode.rec.model = model_name
        self._steps = self._episode.run()
        self._pending_t0 = 0.0
        self.record: EpisodeRecord | None = None

    @property
    def done(self) -> bool:
        return self.record is not None

    @property
    def env(self) -> ToolEnvironment | None:
        return self._episode.env

    def reset(self) -> ModelRequest | EpisodeRecord:
        """Start the episode: the first request (or the record, when it ends before any call)."""
        return self._advance(lambda: next(self._steps))

    def step(
        self, response: ModelResponse | BaseException, latency_s: float | None = None
    ) -> ModelRequest | EpisodeRecord:
        """Feed the model's answer to the last request; returns the next request or the record."""
        if self.record is not None:
            raise RuntimeError("the episode is over: read .record")
        took = latency_s if latency_s is not None else time.perf_counter() - self._pending_t0
        if isinstance(response, BaseException):
            outcome = _Outcome(None, _error_text(response), took)
        else:
            outcome = _check_response(response, took)
        return self._advance(lambda: self._steps.send(outcome))

    def _advance(self, move: Callable[[], ModelRequest]) -> ModelRequest | EpisodeRecord:
        try:
            request = move()
        except StopIteration as stop:
            self.record = stop.value
            return stop.value
        self._pending_t0 = time.perf_counter()
        return request


# -- model call drivers ------------------------------------------------------------------------


@dataclass
class ModelRequest:
    """What the loop asks the model for next: the conversation so far, the tools, the settings."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    settings: GenerationSettings


_Request = ModelRequest


@dataclass
class _Outcome:
    response: ModelResponse | None
    error: str | None
    latency_s: float


def _generate_sync(policy: Any, req: _Request) -> _Outcome:
    t0 = time.perf_counter()
    try:
        resp = policy.generate(req.messages, req.tools, req.settings)
    except Exception as e:  # noqa: BLE001 - a model failure is data, never a crash
        return _Outcome(None, _error_text(e), time.perf_counter() - t0)
    return _check_response(resp, time.perf_counter() - t0)


async def _generate_async(policy: Any, req: _Request) -> _Outcome:
    t0 = time.perf_counter()
    try:
        resp = await agenerate(policy, req.messages, req.tools, req.settings)
    except Exception as e:  # noqa: BLE001
        return _Outcome(None, _error_text(e), time.perf_counter() - t0)
    return _check_response(resp, time.perf_counter() - t0)


def _check_response(resp: Any, latency: float) -> _Outcome:
    if not isinstance(resp, ModelResponse):
        return _Outcome(None, f"model returned {type(resp).__name__}, not a ModelResponse", latency)
    return _Outcome(resp, None, latency)


def _error_text(e: BaseException) -> str:
    kind = "model_error" if isinstance(e, ModelError) else type(e).__name__
    return f"{kind}: {e}"


# -- the episode -------------------------------------------------------------------------------


class _Episode:
    """State of one episode. :meth:`run` is a generator that yields model requests and
    receives their outcomes, so the sync and async drivers share every line of the loop."""

    def __init__(
        self,
        harness: Harness,
        case: Any,
        model: Any,
        env: ToolEnvironment | None,
        settings: GenerationSettings | None,
        rendered: RenderedHarness | None,
        deadline_s: float | None,
        on_step: StepCallback | None,
    ) -> None:
        self.h = harness
        self.case = case
        self.model = model
        self.settings = settings or GenerationSettings()
        self.r = rendered if rendered is not None else render_harness(harness)
        self.deadline_s = deadline_s
        self.on_step = on_step
        self.env = env
        self.policy: Any = model
        self.start = time.perf_counter()
        self.max_turns = int(harness.constraint("max_turns", DEFAULT_MAX_TURNS) or DEFAULT_MAX_TURNS)
        self.max_tool_calls = int(
            harness.constraint("max_tool_calls", DEFAULT_MAX_TOOL_CALLS) or DEFAULT_MAX_TOOL_CALLS
        )
        self.retry = harness.hooks.retry
        self.calls_made = 0
        self.failures: Counter[tuple[str, str]] = Counter()
        self.invalid: Counter[str] = Counter()
        self.specs = {t["function"]["name"]: t["function"] for t in self.r.tools}

        constraints = {k: c.value for k, c in harness.prompt.constraints.items()}
        limit = reply_char_limit(harness)
        if limit is not None:
            constraints["max_reply_chars"] = limit
        self.rec = EpisodeRecord(
            case_id=str(case.id),
            harness=harness.name,
            harness_version=harness.version,
            variant_id=getattr(case, "variant", None),
            model=str(getattr(model, "name", type(model).__name__)),
            tools=self.r.tools,
            constraints=constraints,
            banned_phrases=banned_phrases(harness),
            retry={"max_attempts": int(self.retry.max_attempts), "on": list(self.retry.on)},
            skill_tools={s.key: list(s.tools) for s in harness.skills},
        )

    # The generator ------------------------------------------------------------------------
    def run(self) -> Generator[_Request, _Outcome, EpisodeRecord]:
        rec = self.rec
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.r.system_prompt}]
        messages += history_messages(self.case)
        messages.append(viewer_message(self.case))
        rec.messages = messages
        try:
            self.policy = bind_model(self.model, self.case, self.h) if self.model is not None else None
            if self.env is None:
                self.env = environment_for(self.case)
        except Exception as e:  # noqa: BLE001 - binding the model is part of calling it
            rec.model_steps.append(ModelStep(turn=1, latency_s=0.0, error=_error_text(e)))
            return self._finish(Termination.MODEL_ERROR)

        turn = 0
        turn_limit = self.max_turns
        revised = False
        bad_text_turns = 0
        budget_refused_turns = 0
        while True:
            if turn >= turn_limit:
                return self._finish(Termination.MAX_TOOL_CALLS if budget_refused_turns else Termination.MAX_TURNS)
            if self._past_deadline():
                return self._finish(Termination.TIMEOUT)
            turn += 1
            outcome = yield _Request(list(messages), self.r.tools, self.settings)
            step = ModelStep(turn=turn, latency_s=outcome.latency_s)
            if outcome.error is not None or outcome.response is None:
                step.error = outcome.error
                self._model_step(step)
                return self._finish(Termination.MODEL_ERROR)

            resp = outcome.response
            content = resp.content or ""
            calls = list(resp.tool_calls)
            parse_errors = list(resp.parse_errors)
            if not calls and ("<tool_call>" in content or "</tool_call>" in content):
                content, calls, errors = parse_tool_calls(content)
                parse_errors += errors
            step.prompt_tokens = int(resp.prompt_tokens or 0)
            step.completion_tokens = int(resp.completion_tokens or 0) or count_tokens(resp.content or "")
            step.think_tokens = think_tokens(content)
            step.n_tool_calls = len(calls)
            step.parse_errors = parse_errors
            self._token_ids(turn, resp)
            self._model_step(step)

            if calls:
                ids = [c.id or f"call_{turn}_{i}" for i, c in enumerate(calls)]
                messages.append(_assistant(content, calls, ids))
                refused = 0
                for call, call_id in zip(calls, ids):
                    tool_step, tool_message = self._execute(call, call_id, turn)
                    messages.append(tool_message)
                    refused += tool_step.error == "budget"
                    if self._past_deadline():
                        return self._finish(Termination.TIMEOUT)
                if refused == len(calls):
                    budget_refused_turns += 1
                    # Told once that the budget is spent; calling again ends the episode.
                    if budget_refused_turns >= 2:
                        return self._finish(Termination.MAX_TOOL_CALLS)
                continue

            if parse_errors:
                bad_text_turns += 1
                if "invalid_call" in self.retry.on and bad_text_turns < max(1, int(self.retry.max_attempts)):
                    messages.append({"role": "assistant", "content": content})
                    messages.append(
                        runtime_note(
                            self._feedback("tool call", f"unreadable tool call: {parse_errors[0]}", bad_text_turns)
                        )
                    )
                    continue

            reply = visible_text(content)
            guarded = apply_guards(reply, self.h, allow_revise=not revised)
            rec.guard_events += guarded.events
            if guarded.revise_feedback is not None:
                revised = True
                messages.append({"role": "assistant", "content": content})
                messages.append(runtime_note(guarded.revise_feedback))
                # A revision is one turn more than the budget, never fewer.
                turn_limit = max(turn_limit, turn + 1)
                continue
            messages.append({"role": "assistant", "content": content})
            rec.raw_reply = reply
            rec.reply = guarded.reply
            return self._finish(Termination.REPLY)

    # Tool calls ---------------------------------------------------------------------------
    def _execute(self, call: ToolCall, call_id: str, turn: int) -> tuple[ToolStep, dict[str, Any]]:
        name = call.name
        key = self.r.tool_key_by_name.get(name)
        step = ToolStep(name=name, key=key, backend=None, arguments=call.arguments, valid=False, ok=False, turn=turn)
        hook = self.h.hooks.message
        t0 = time.perf_counter()

        def done(content: str) -> tuple[ToolStep, dict[str, Any]]:
            step.latency_s = time.perf_counter() - t0
            self.rec.tool_steps.append(step)
            if self.on_step is not None:
                self.on_step(step)
            return step, {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}

        def failed(kind: str, detail: str, counter_attempt: int) -> tuple[ToolStep, dict[str, Any]]:
            step.error = kind
            return done(format_tool_error(kind, self._feedback(name, detail, counter_attempt, trigger=kind), hook))

        if self.calls_made >= self.max_tool_calls:
            step.error = "budget"
            note = f"No tool calls left (at most {self.max_tool_calls} per reply). Answer the viewer now with what you have."
            return done(format_tool_error("budget", note, hook))
        self.calls_made += 1

        if key is None:
            self.invalid[f"?{name}"] += 1
            known = ", ".join(self.specs)
            return failed("unknown_tool", f"unknown tool {name!r}; the tools are {known}", self.invalid[f"?{name}"])

        args = call.arguments
        if args is None:
            self.invalid[key] += 1
            raw = (call.raw_arguments or "")[:80]
            return failed("invalid_call", f"arguments are not valid JSON: {raw}", self.invalid[key])
        problem = check_arguments(self.specs[name].get("parameters") or {}, args)
        if problem is not None:
            self.invalid[key] += 1
            return failed("invalid_call", f"invalid arguments: {problem}", self.invalid[key])
        step.valid = True

        if key == self.h.skill_loader.key:
            return self._load_skill(step, args, done)

        tool = self.h.tool(key)
        step.backend = tool.backend
        sig = (key, json.dumps(args, sort_keys=True, default=str))
        attempt = 1 + self.failures[sig] + self.invalid[key]
        step.attempt = attempt
        if attempt > max(1, int(self.retry.max_attempts)):
            step.error = "retries_exhausted"
            note = f"No attempts left for {name} (at most {self.retry.max_attempts}). Tell the viewer you will check; do not guess."
            return done(format_tool_error("retries_exhausted", note, hook))
        if attempt > 1 and self.retry.backoff_s:
            time.sleep(float(self.retry.backoff_s))
        try:
            result = self.env.call(tool.backend, args, tool_key=key, attempt=attempt, timeout_s=tool.timeout_s)  # type: ignore[union-attr]
        except ToolTimeout as e:
            self.failures[sig] += 1
            return failed("timeout", str(e) or "timeout", attempt)
        except ToolError as e:
            self.failures[sig] += 1
            return failed(getattr(e, "kind", "tool_error") or "tool_error", str(e), attempt)
        except Exception as e:  # noqa: BLE001 - a broken backend is a tool error, not a crash
            self.failures[sig] += 1
            return failed("tool_error", f"{type(e).__name__}: {e}", attempt)
        step.result = result
        if _is_empty(result):
            self.failures[sig] += 1
            return failed("empty_result", "the tool returned nothing", attempt)
        step.ok = True
        return done(format_tool_result(result, hook))

    def _load_skill(self, step: ToolStep, args: dict[str, Any], done: Callable[[str], Any]) -> Any:
        skill_name = str(args.get("name", ""))
        skill_key = self.r.skill_key_by_name.get(skill_name)
        if skill_key is None:
            step.valid = False
            step.error = "invalid_call"
            self.invalid[self.h.skill_loader.key] += 1
            names = ", ".join(self.r.skill_key_by_name)
            return done(
                format_tool_error(
                    "invalid_call", f"unknown skill {skill_name!r}; the skills are {names}", self.h.hooks.message
                )
            )
        skill = self.h.skill(skill_key)
        file = args.get("file")
        if file:  # a file the skill ships (references/...): served from the harness folder only
            try:
                text = read_skill_file(self.h, skill, str(file))
            except HarnessError as e:
                step.valid = False
                step.error = "invalid_call"
                self.invalid[self.h.skill_loader.key] += 1
                return done(format_tool_error("invalid_call", e.issues[0].message, self.h.hooks.message))
        else:
            text = render_skill(self.h, skill)
        step.ok = True
        step.result = text
        self.rec.skills_loaded.append(skill_key)
        return done(text)

    def _feedback(self, tool_name: str, detail: str, attempt: int, trigger: str = "invalid_call") -> str:
        """The retry hook's feedback while attempts remain; otherwise a plain stop message."""
        trigger = ERROR_TRIGGERS.get(trigger, "tool_error")  # other failures are tool errors
        max_attempts = max(1, int(self.retry.max_attempts))
        if trigger in self.retry.on and attempt < max_attempts:
            ctx = {"tool": tool_name, "error": detail, "attempt": attempt, "max_attempts": max_attempts}
            return fill_template(self.retry.feedback_template, ctx)
        return f"{tool_name} failed ({detail}). Do not call it again; tell the viewer you will check, and do not guess."

    # Bookkeeping --------------------------------------------------------------------------
    def _model_step(self, step: ModelStep) -> None:
        self.rec.model_steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def _token_ids(self, turn: int, resp: ModelResponse) -> None:
        if resp.prompt_token_ids is None and resp.completion_token_ids is None:
            return
        if self.rec.turn_token_ids is None:
            self.rec.turn_token_ids = []
        self.rec.turn_token_ids.append(
            {
                "turn": turn,
                "prompt_token_ids": resp.prompt_token_ids,
                "completion_token_ids": resp.completion_token_ids,
                "logprobs": resp.logprobs,
            }
        )

    def _past_deadline(self) -> bool:
        return self.deadline_s is not None and time.perf_counter() - self.start > self.deadline_s

    def _finish(self, termination: Termination) -> EpisodeRecord:
        self.rec.termination = termination
        self.rec.latency_s = time.perf_counter() - self.start
        return self.rec


def _assistant(content: str, calls: list[ToolCall], ids: list[str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False)
                    if c.arguments is not None
                    else (c.raw_arguments or ""),
                },
            }
            for c, call_id in zip(calls, ids)
        ],
    }


def _is_empty(result: Any) -> bool:
    if result is None or result == "" or result == [] or result == {}:
        return True
    if isinstance(result, dict):
        return all(v is None or v == "" or v == [] or v == {} for v in result.values())
    return False
