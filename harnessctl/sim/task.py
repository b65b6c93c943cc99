"""The task, defined once: intents, the skill each needs, fault kinds, the retry triggers and the
pass mark. The case generator, the oracle, the world and the scorer all read these names from here.

>>> INTENT_SKILL["flash_sale"], SKILL_FALLBACKS["flash_sale"]
('flash_sale', ['price_promo', 'stock_size'])
>>> retry_trigger("unknown_tool"), retry_trigger("partial")
('invalid_call', None)
"""

from __future__ import annotations

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

#: The runtime's error for a failed call -> the ``hooks.retry.on`` trigger it answers to.
#: Errors not listed (``partial`` results, ``budget`` refusals) trigger no retry.
RETRY_TRIGGERS = {
    "tool_error": "tool_error",
    "timeout": "timeout",
    "invalid_call": "invalid_call",
    "unknown_tool": "invalid_call",
    "empty_result": "empty_result",
}

#: Errors the world causes (not the model): a call that failed this way was still a right call.
WORLD_ERRORS = ("tool_error", "timeout", "empty_result")

#: A case passes at this total score (and with no hard failure).
PASS_THRESHOLD = 0.8


def retry_trigger(error: str | None) -> str | None:
    """The retry-hook trigger a tool error answers to (None: no retry applies)."""
    return RETRY_TRIGGERS.get(error or "")
