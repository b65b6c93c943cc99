"""The agent loop survives whatever a model or a backend does, and records it.

Malformed tool-call text, unknown tools, invalid arguments, backend timeouts and errors (the
retry hook honoured, then a graceful reply), a model that never stops calling tools, a model
or a server that fails: each ends as data in the record, never as an exception.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from harnessctl.harness import load_harness
from harnessctl.models.base import GenerationSettings, ModelError
from harnessctl.models.scripted import ScriptedModel
from harnessctl.models.types import ModelResponse, ToolCall
from harnessctl.runtime import (
    FunctionEnvironment,
    Termination,
    arun_episode,
    run_episode,
)
from harnessctl.sim import OracleModel, case_from_query, score_episode


@pytest.fixture(scope="module")
def shipped(livecommerce_path):
    return load_harness(livecommerce_path)


@pytest.fixture
def price_case():
    return case_from_query("how much is the one on screen?", "P001")


def call(tool: str, **args) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


LOAD = call("load_skill", name="explain_price")
DETAILS = call("get_product_details", product_id="P001")
REPLY = "Glow Serum is $18.99 live, code BEAUTY15 gives 15% off!"


def tool_messages(rec):
    return [m for m in rec.messages if m["role"] == "tool"]


# -- what the model writes ----------------------------------------------------------------------


def test_unparsable_arguments_get_the_retry_feedback_and_a_second_chance(shipped, price_case):
    broken = '<tool_call>{"name": "get_product_details", "arguments": {product_id: P001}}</tool_call>'
    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, broken, DETAILS, REPLY]))
    assert rec.termination is Termination.REPLY and rec.reply == REPLY
    bad = rec.tool_steps[1]
    assert (bad.key, bad.valid, bad.ok, bad.error) == ("product_details", False, False, "invalid_call")
    assert rec.model_steps[1].parse_errors  # the malformed text is recorded for scoring
    feedback = json.loads(tool_messages(rec)[1]["content"])
    assert feedback["error"] == "invalid_call" and "Attempt 1 of 2" in feedback["message"]
    assert rec.tool_steps[2].ok and rec.tool_steps[2].attempt == 2


def test_tool_call_text_that_is_not_json_at_all_gets_a_runtime_note(shipped, price_case):
    rec = run_episode(
        shipped, price_case, ScriptedModel([LOAD, "<tool_call>get the price</tool_call>", DETAILS, REPLY])
    )
    assert rec.termination is Termination.REPLY and rec.reply == REPLY
    assert rec.model_steps[1].parse_errors and rec.model_steps[1].n_tool_calls == 0
    note = next(m for m in rec.messages if m.get("name") == "runtime")
    assert "unreadable tool call" in note["content"] and note["role"] == "user"
    assert "malformed_tool_call" in score_episode(rec, price_case).failures


def test_unknown_tools_are_refused_with_the_list_of_tools(shipped, price_case):
    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, call("get_price", product_id="P001"), DETAILS, REPLY]))
    assert rec.termination is Termination.REPLY
    step = rec.tool_steps[1]
    assert (step.name, step.key, step.error) == ("get_price", None, "unknown_tool")
    assert "get_product_details" in tool_messages(rec)[1]["content"]


def test_arguments_are_validated_against_the_tool_schema(shipped):
    case = case_from_query("where is my order LM123456?", "P001")
    rec = run_episode(
        shipped,
        case,
        ScriptedModel(
            [
                call("load_skill", name="order_help"),
                call("track_order", order_id="lm12"),
                "Could you check your order number?",
            ]
        ),
    )
    step = rec.tool_steps[1]
    assert step.key == "order_status" and not step.valid and step.error == "invalid_call"
    assert "does not match" in tool_messages(rec)[1]["content"]


def test_unknown_skill_names_are_invalid_calls(shipped, price_case):
    rec = run_episode(shipped, price_case, ScriptedModel([call("load_skill", name="pricing"), LOAD, REPLY]))
    assert rec.tool_steps[0].error == "invalid_call" and rec.skills_loaded == ["price_promo"]


def test_a_loaded_skill_returns_its_rules_by_the_current_tool_names(shipped, price_case):
    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, REPLY]))
    rules = tool_messages(rec)[0]["content"]
    assert rules.startswith("Skill: explain_price") and "get_promotions" in rules


# -- what the backends do -----------------------------------------------------------------------


def test_a_timeout_is_retried_as_the_hook_says_and_the_retry_works(shipped, price_case):
    price_case.faults = {"product_details": ["timeout"]}
    rec = run_episode(shipped, price_case, OracleModel())
    details = [s for s in rec.tool_steps if s.key == "product_details"]
    assert [(s.error, s.attempt) for s in details] == [("timeout", 1), (None, 2)]
    assert "$18.99" in rec.reply
    assert score_episode(rec, price_case).total == 1.0


def test_persistent_errors_end_in_a_graceful_reply_that_invents_nothing(shipped, price_case):
    price_case.faults = {"product_details": ["error"] * 5, "promotions": ["malformed"] * 5}
    h = shipped.copy()
    h.prompt.constraints["max_tool_calls"].value = 8  # room for every retry the hook allows
    rec = run_episode(h, price_case, OracleModel())
    assert [s.error for s in rec.tool_steps if s.key != "load_skill"] == ["tool_error"] * 4
    assert max(s.attempt for s in rec.tool_steps) == 2  # max_attempts of the shipped hook
    assert rec.termination is Termination.REPLY and "$" not in rec.reply
    assert score_episode(rec, price_case).passed


def test_calls_past_max_attempts_are_refused(shipped, price_case):
    price_case.faults = {"product_details": ["error"] * 5}
    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, DETAILS, DETAILS, DETAILS, "Let me check!"]))
    assert [s.error for s in rec.tool_steps[1:]] == ["tool_error", "tool_error", "retries_exhausted"]
    b = score_episode(rec, price_case)
    assert "retry_after_limit:product_details" in b.failures


def test_a_retry_hook_that_does_not_cover_a_failure_says_so(shipped, price_case):
    price_case.faults = {"promotions": ["empty"]}  # empty_result is not in the shipped retry.on
    rec = run_episode(shipped, price_case, OracleModel())
    promos = [s for s in rec.tool_steps if s.key == "promotions"]
    assert [s.error for s in promos] == ["empty_result"]
    assert "Do not call it again" in tool_messages(rec)[-1]["content"]
    assert score_episode(rec, price_case).total == 1.0


def test_a_backend_that_raises_or_hangs_is_a_tool_error_not_a_crash(shipped, price_case):
    def broken(env, args):
        raise RuntimeError("database is on fire")

    def slow(env, args):
        time.sleep(1.0)
        return {"late": True}

    h = shipped.copy()
    h.tool("promotions").timeout_s = 0.05
    env = FunctionEnvironment({"sim.get_product": broken, "sim.get_promotions": slow})
    try:
        rec = run_episode(
            h,
            price_case,
            ScriptedModel([LOAD, DETAILS + call("get_promotions", product_id="P001"), "Let me check!"]),
            env=env,
        )
    finally:
        env.close()
    errors = {s.key: (s.error, s.ok) for s in rec.tool_steps}
    assert errors["product_details"] == ("tool_error", False)
    assert errors["promotions"] == ("timeout", False)
    assert "database is on fire" in tool_messages(rec)[1]["content"]
    assert rec.termination is Termination.REPLY


# -- budgets and guards -------------------------------------------------------------------------


def test_a_model_that_never_stops_calling_tools_is_stopped_by_the_budget(shipped, price_case):
    rec = run_episode(shipped, price_case, ScriptedModel([DETAILS], repeat_last=True))
    assert rec.termination is Termination.MAX_TOOL_CALLS
    executed = [s for s in rec.tool_steps if s.error != "budget"]
    assert len(executed) == 4  # max_tool_calls of the shipped harness
    assert [s.error for s in rec.tool_steps if s.error == "budget"]
    assert "No tool calls left" in tool_messages(rec)[-1]["content"]
    b = score_episode(rec, price_case)
    assert "over_tool_budget" in b.failures and "no_reply" in b.failures


def test_the_turn_budget_ends_a_loop_of_parallel_calls(shipped, price_case):
    h = shipped.copy()
    h.prompt.constraints["max_tool_calls"].value = 8
    h.prompt.constraints["max_turns"].value = 3
    rec = run_episode(h, price_case, ScriptedModel([LOAD, call("check_stock", product_id="P001")], repeat_last=True))
    assert rec.termination is Termination.MAX_TURNS and len(rec.model_steps) == 3


def test_a_revise_guard_gives_one_more_turn_then_fixes_the_text(shipped, price_case):
    said = "This serum cures everything, $18.99 with code BEAUTY15!"
    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, said, said]))
    assert len(rec.model_steps) == 3  # the revision turn
    assert rec.guard_events[0]["action"] == "revise" and rec.guard_events[-1]["action"] == "replace"
    assert "cures" not in rec.reply.lower() and rec.raw_reply == said
    note = [m for m in rec.messages if m.get("name") == "runtime"][0]
    assert '"cures"' in note["content"]
    assert "banned_phrase:cures" in score_episode(rec, price_case).failures


def test_a_revision_can_fix_the_reply(shipped, price_case):
    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, "It cures acne, $18.99!", REPLY]))
    assert rec.reply == REPLY == rec.raw_reply and rec.termination is Termination.REPLY


def test_the_length_guard_truncates_at_the_limit_in_force(shipped, price_case):
    h = shipped.copy()
    h.prompt.constraints["max_reply_chars"].value = 60
    long = REPLY + " It is light and everyone in the chat keeps asking about it!"
    rec = run_episode(h, price_case, ScriptedModel([LOAD, long]))
    assert len(rec.reply) <= 60 and rec.reply.endswith("…") and rec.raw_reply == long
    assert rec.constraints["max_reply_chars"] == 60


def test_a_deadline_ends_a_slow_episode(shipped, price_case):
    def slow(messages, tools):
        time.sleep(0.05)
        return DETAILS

    rec = run_episode(shipped, price_case, ScriptedModel([slow], repeat_last=True), deadline_s=0.08)
    assert rec.termination is Termination.TIMEOUT


# -- model failures -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [ModelError("503 from upstream"), RuntimeError("CUDA out of memory"), ValueError("bad response")],
    ids=["model-error", "runtime-error", "value-error"],
)
def test_a_model_that_raises_is_recorded_as_a_model_error(shipped, price_case, failure):
    def fail(messages, tools):
        raise failure

    rec = run_episode(shipped, price_case, ScriptedModel([LOAD, fail]))
    assert rec.termination is Termination.MODEL_ERROR
    assert str(failure) in rec.model_steps[-1].error and rec.reply == ""
    assert rec.skills_loaded == ["price_promo"]  # what happened before is kept


def test_a_model_that_returns_garbage_or_cannot_bind_is_a_model_error(shipped, price_case):
    class Garbage:
        name = "garbage"

        def generate(self, messages, tools, settings):
            return {"content": "hi"}

    class Unbindable:
        name = "unbindable"

        def for_episode(self, case, harness):
            raise ModelError("no such checkpoint")

    assert run_episode(shipped, price_case, Garbage()).termination is Termination.MODEL_ERROR
    rec = run_episode(shipped, price_case, Unbindable())
    assert rec.termination is Termination.MODEL_ERROR and "no such checkpoint" in rec.model_steps[0].error


def test_a_server_that_returns_500s_is_recorded_not_raised(shipped, price_case):
    """End to end on loopback: the embedded server answers 500, litellm gives up, the runtime
    records a model error."""
    from harnessctl.models.litellm_backend import LiteLLMModel
    from harnessctl.models.server import EmbeddedServer

    class Down:
        name = "down"

        def for_episode(self, case, harness):
            return self

        def generate(self, messages, tools, settings):
            raise ModelError("GPU fell over")

    server = EmbeddedServer(Down(), model_name="down").start()
    try:
        model = LiteLLMModel("openai/down", api_base=server.url, max_retries=1, backoff_s=0.01)
        rec = run_episode(shipped, price_case, model, settings=GenerationSettings(max_tokens=16, timeout_s=10))
    finally:
        server.stop()
    assert rec.termination is Termination.MODEL_ERROR
    assert "500" in rec.model_steps[0].error
    assert server.responses == {500: 2}


# -- the model seam ------------------------------------------------------------------------------


def test_a_trainer_drives_the_loop_with_its_own_generate_and_gets_token_ids(shipped, price_case):
    class Sampler:
        """What a trainer passes: any object with generate(); token ids come back per turn."""

        name = "policy"

        def __init__(self):
            self.turn = 0

        def generate(self, messages, tools, settings):
            self.turn += 1
            ids = list(range(len(messages)))
            if self.turn == 1:
                return ModelResponse(
                    tool_calls=[ToolCall(name="load_skill", arguments={"name": "explain_price"})],
                    prompt_token_ids=ids,
                    completion_token_ids=[7, 8],
                    logprobs=[-0.5, -0.1],
                )
            return ModelResponse(
                content="<think>price</think>" + REPLY, prompt_token_ids=ids, completion_token_ids=[9], logprobs=[-0.2]
            )

    rec = run_episode(shipped, price_case, Sampler())
    assert rec.reply == REPLY and rec.model_steps[1].think_tokens == 1
    assert [t["completion_token_ids"] for t in rec.turn_token_ids] == [[7, 8], [9]]
    assert rec.turn_token_ids[1]["prompt_token_ids"] == list(range(4))
    assert rec.turn_token_ids[0]["logprobs"] == [-0.5, -0.1]


def test_async_and_sync_loops_record_the_same_episode(shipped):
    from harnessctl.sim import generate_cases

    cases = generate_cases(12, seed=2, faults=0.5)

    async def all_async():
        return await asyncio.gather(*(arun_episode(shipped, c, OracleModel()) for c in cases))

    records = asyncio.run(all_async())
    for case, rec in zip(cases, records):
        assert strip_times(rec.to_dict()) == strip_times(run_episode(shipped, case, OracleModel()).to_dict())


def strip_times(d):
    d = json.loads(json.dumps(d))
    d.pop("latency_s")
    for s in d["model_steps"] + d["tool_steps"]:
        s.pop("latency_s")
    return d


def test_messages_are_openai_chat_with_the_context_line(shipped, price_case):
    price_case.context.history = [{"role": "user", "content": "hi Mia"}, {"role": "assistant", "content": "Hi!"}]
    rec = run_episode(shipped, price_case, OracleModel())
    roles = [m["role"] for m in rec.messages]
    assert roles[:4] == ["system", "user", "assistant", "user"]
    assert rec.messages[3]["content"].startswith("[on screen: Glow Serum (P001) | viewer: @viewer, central]\n")
    assert rec.messages[4]["tool_calls"][0]["function"]["name"] == "load_skill"
    assert rec.messages[-1] == {"role": "assistant", "content": rec.reply}
    assert rec.tools[0]["function"]["name"] == "load_skill"
