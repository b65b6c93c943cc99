"""The task, defined once: per intent the skill it needs, the tool calls a correct answer makes
(with the arguments it sends and the ones the scorer accepts), which tool each fact comes from;
and the fault kinds, the retry triggers and the pass mark. The case generator
(:mod:`~harnessctl.sim.expectations`), the oracle and the scorer all read them from here; how a
fact is *said* is :mod:`harnessctl.sim.facts`, which the generator and the oracle share.

>>> INTENT_SKILL["flash_sale"], SKILL_FALLBACKS["flash_sale"]
('flash_sale', ['price_promo', 'stock_size'])
>>> retry_trigger("unknown_tool"), retry_trigger("partial")
('invalid_call', None)
>>> [(c.tool, c.args, c.accept) for c in task_calls("stock", {"product_id": "P021", "variant": "M"})]
[('stock_check', {'product_id': 'P021', 'variant': 'M'}, {'product_id': 'P021', 'variant': ['M', 'm']})]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harnessctl.harness.model import ERROR_TRIGGERS
from harnessctl.sim.meaning import fact_kind

INTENTS = (
    "greeting",
    "product_info",
    "price",
    "promotion",
    "stock",
    "size_advice",
    "shipping",
    "returns",
    "order_status",
    "comparison",
    "compliance_sensitive",
    "complaint",
    "off_topic",
    "human_request",
    "flash_sale",
)

#: The skill (by key) each intent needs in the shipped harness.
INTENT_SKILL = {
    "greeting": "greeting",
    "product_info": "product_intro",
    "comparison": "compare_products",
    "price": "price_promo",
    "promotion": "price_promo",
    "stock": "stock_size",
    "size_advice": "stock_size",
    "shipping": "shipping_returns",
    "returns": "shipping_returns",
    "order_status": "order_help",
    "compliance_sensitive": "compliance",
    "complaint": "complaint",
    # A person is what the complaint skill hands over to; it lists the hand-off tool.
    "human_request": "complaint",
    "off_topic": "off_topic",
    "flash_sale": "flash_sale",
}

#: Where a harness lacks an intent's skill (an older version), the skills that cover its tools.
SKILL_FALLBACKS = {"flash_sale": ["price_promo", "stock_size"]}

#: What the world can do to a tool call. ``error``: an upstream failure; ``timeout``: no answer;
#: ``malformed``: a cut-off payload the runtime cannot read (a tool error); ``empty``: nothing
#: back; ``partial``: a readable result with fields missing and lists cut short (no error, so no
#: retry: the reply must say only what came back).
FAULT_KINDS = ("error", "timeout", "malformed", "partial", "empty")

#: The runtime's error for a failed call -> the ``hooks.retry.on`` trigger it answers to (defined
#: with the harness's hooks, read by the runtime too).
RETRY_TRIGGERS = ERROR_TRIGGERS

#: Errors the world causes (not the model): a call that failed this way was still a right call.
WORLD_ERRORS = ("tool_error", "timeout", "empty_result")

#: A case passes at this total score (and with no hard failure).
PASS_THRESHOLD = 0.8


def retry_trigger(error: str | None) -> str | None:
    """The retry-hook trigger a tool error answers to (None: no retry applies)."""
    return RETRY_TRIGGERS.get(error or "")


# -- the calls each intent needs ------------------------------------------------------------------


@dataclass(frozen=True)
class TaskCall:
    """A tool call a correct answer makes: ``args`` is what it sends (what the oracle sends),
    ``accept`` what the scorer checks (parameter -> a value or a list of acceptable values;
    parameters not named are free)."""

    tool: str  # tool key
    args: dict[str, Any] = field(default_factory=dict)
    accept: dict[str, Any] = field(default_factory=dict)
    round: int = 1  # a round-2 call needs a round-1 result first (search, then details)
    required: bool = True  # False: allowed, not needed


def task_calls(intent: str, slots: dict[str, Any], query: str = "") -> list[TaskCall]:
    """The calls an ``intent`` comment needs, from what its words pin down (``slots``: product,
    other product, variant, region as the catalog names it and as the viewer said it, order
    number, urgency, search)."""
    pid = slots.get("product_id")

    def on(tool: str, product: Any = pid, **kw: Any) -> TaskCall:
        return TaskCall(tool, {"product_id": product}, {"product_id": product}, **kw)

    if intent == "product_info":
        if slots.get("search"):
            return [
                TaskCall("product_search", {"query": search_words(query)}, {}, round=1),
                on("product_details", round=2),
            ]
        return [on("product_details")]
    if intent in ("price", "promotion"):
        return [on("product_details"), on("promotions")]
    if intent == "stock":
        variant = slots.get("variant")
        if variant:
            forms = sorted({variant, variant.lower(), variant.upper()})
            return [
                TaskCall("stock_check", {"product_id": pid, "variant": variant}, {"product_id": pid, "variant": forms})
            ]
        return [on("stock_check")]
    if intent == "size_advice":
        return [on("product_details"), on("stock_check", required=False)]
    if intent == "compliance_sensitive":
        return [on("product_details")]
    if intent == "shipping":
        region = slots.get("region")
        accepted = sorted({str(region), str(slots.get("region_said", region)).lower()}) if region else None
        return [TaskCall("shipping_estimate", {"region": region}, {"region": accepted})]
    if intent == "returns":
        return [on("return_policy")]
    if intent == "order_status":
        oid = slots.get("order_id")
        return [TaskCall("order_status", {"order_id": str(oid).upper()}, {"order_id": str(oid).upper()})] if oid else []
    if intent == "comparison":
        return [on("product_details"), on("product_details", slots.get("other_id"))]
    if intent in ("complaint", "human_request"):
        calls = []
        oid = slots.get("order_id")
        if oid:
            calls.append(TaskCall("order_status", {"order_id": str(oid).upper()}, {"order_id": str(oid).upper()}))
        high = slots.get("urgency") == "high"
        reason = (
            "damaged or missing item"
            if high
            else ("viewer asked for a person" if intent == "human_request" else "unhappy viewer")
        )
        calls.append(
            TaskCall(
                "human_handoff",
                {"reason": reason, "urgency": "high" if high else "normal"},
                {"urgency": ["high"]} if high else {},
            )
        )
        return calls
    if intent == "flash_sale":
        return [on("promotions"), on("stock_check")]
    return []  # greeting, off_topic: no tool


def fact_sources(intent: str, facts: list[str], calls: list[TaskCall]) -> dict[str, str]:
    """Which tool each fact comes from — ``"<tool key>@<product id>"`` where several calls of one
    tool give different facts; facts the viewer's message shows (greeting, off topic) have none."""
    if intent in ("greeting", "off_topic") or not facts:
        return {}
    if intent == "price":
        return {facts[0]: "product_details", **{f: "promotions" for f in facts[1:]}}
    if intent == "promotion":
        # With a coupon every fact is the coupon's; without one, the fact is the live price.
        no_coupon = len(facts) == 1 and facts[0].startswith("$") and not facts[0].endswith(" off")
        return {f: ("product_details" if no_coupon else "promotions") for f in facts}
    if intent == "comparison":
        return {f: f"product_details@{c.args['product_id']}" for f, c in zip(facts, calls)}
    if intent == "flash_sale":
        return {f: ("stock_check" if f.endswith(" left") or f == "sold out" else "promotions") for f in facts}
    single = {
        "product_info": "product_details",
        "stock": "stock_check",
        "size_advice": "product_details",
        "shipping": "shipping_estimate",
        "returns": "return_policy",
        "order_status": "order_status",
        "compliance_sensitive": "product_details",
        "complaint": "human_handoff",
        "human_request": "human_handoff",
    }
    return {f: single[intent] for f in facts}


#: The skill rule (by key, in the intent's skill) that asks for each kind of fact
#: (:func:`harnessctl.sim.meaning.fact_kind`), and for the claims a reply must not make.
FACT_RULES: dict[str, dict[str, str]] = {
    "greeting": {"handle": "use_name"},
    "product_info": {"text": "name_it"},
    "price": {
        "money": "live_price",
        "text": "check_deals",
        "percent_off": "check_deals",
        "money_off": "check_deals",
        "clock": "end_time",
    },
    "promotion": {
        "money": "live_price",
        "text": "check_deals",
        "percent_off": "check_deals",
        "money_off": "check_deals",
        "clock": "end_time",
    },
    "stock": {"count": "exact_count", "in_stock": "exact_count", "sold_out": "exact_count", "text": "sold_out"},
    "size_advice": {"size": "size_from_card"},
    "shipping": {
        "day_range": "days_and_fee",
        "days": "days_and_fee",
        "money": "days_and_fee",
        "free_shipping": "days_and_fee",
    },
    "returns": {"days": "returns_from_policy"},
    "order_status": {
        "text": "status_and_date",
        "status": "status_and_date",
        "date": "status_and_date",
        "order_number": "ask_for_number",
    },
    "comparison": {"money": "one_difference", "forbidden": "no_winner"},
    "compliance_sensitive": {"text": "not_medicine", "forbidden": "no_absolutes"},
    "complaint": {"text": "hand_off"},
    "human_request": {"text": "hand_off"},
    "off_topic": {"text": "redirect"},
    "flash_sale": {
        "money": "window",
        "clock": "window",
        "date": "window",
        "count": "scarcity_true",
        "sold_out": "scarcity_true",
        "limit": "one_per_viewer",
    },
}


def fact_rule(intent: str, fact: str) -> str | None:
    """The rule key that asks for ``fact`` in the skill of ``intent`` (None: no rule says).

    >>> fact_rule("flash_sale", "23 left"), fact_rule("price", "BEAUTY15"), fact_rule("greeting", "x")
    ('scarcity_true', 'check_deals', None)
    """
    return FACT_RULES.get(intent, {}).get(fact_kind(fact))


_STOP = {
    "the",
    "a",
    "an",
    "do",
    "you",
    "u",
    "have",
    "tell",
    "me",
    "more",
    "about",
    "what",
    "is",
    "like",
    "pls",
    "please",
    "describe",
    "it",
    "this",
    "one",
}


def search_words(query: str) -> str:
    """The words of a viewer's message worth searching the catalog for."""
    words = [w for w in re.findall(r"[A-Za-z0-9]+", query) if w.lower() not in _STOP]
    return " ".join(words) or query
