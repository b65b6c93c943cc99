"""The keyword intent classifier for free-form viewer comments.

>>> classify_intent("how much is it?"), classify_intent("any coupon?")
('price', 'promotion')
"""

from __future__ import annotations

import re

# First match wins, so the order settles overlaps ("my order arrived broken" is a complaint,
# "when will my order arrive" order status, "when will it arrive" shipping).
ORDER_RE = re.compile(r"\b([A-Za-z]{2}\d{6})\b")
PROMO_WORDS = r"\b(coupon|coupons|code|codes|discount|discounts|deal|deals|promo|voucher|vouchers)\b"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    (intent, re.compile(pattern, re.IGNORECASE))
    for intent, pattern in [
        (
            "human_request",
            r"\b(real person|human|customer service|agent|staff|speak to someone|talk to someone|manager)\b",
        ),
        (
            "complaint",
            r"\b(broken|damaged|missing|leaking|cracked|never came|never arrived|worst|angry|terrible|scam|disappointed|not happy|complain)\b",
        ),
        ("order_status", r"\b(my order|track|ordered|order [a-z]{2}\d{6}|[a-z]{2}\d{6})\b"),
        ("flash_sale", r"\b(flash|countdown)\b"),
        (
            "compliance_sensitive",
            r"\b(cure|cures|treat|treats|acne|eczema|pregnan\w*|allerg\w*|medicine|insomnia|diabetes|heal|heals|joint pain|safe for)\b",
        ),
        ("comparison", r"(\bvs\.?\b|\bversus\b|\bbetter\b|\bdifference\b|\bcompare\b|\bor the\b)"),
        ("returns", r"\b(return|returns|refund|exchange)\b"),
        ("shipping", r"\b(ship|shipping|deliver|delivery|arrive|postage)\b"),
        (
            "size_advice",
            r"(\b(which|what) size\b|\bsize for\b|\bfits?\b|\btall\b|\d{3}\s*cm\b|\bruns? (small|big|large)\b)",
        ),
        ("stock", r"\b(stock|left|sold out|available|still have)\b"),
        # Price before promotion: "how much? any coupon?" asks both, and the price answer
        # (live price and the best coupon) covers both; a coupon-only ask stays a promotion.
        ("price", r"(\bhow much\b|\bhw much\b|\bprice\b|\bcost\b|\bexpensive\b|\$\$)"),
        ("promotion", PROMO_WORDS),
        (
            "product_info",
            r"\b(made of|tell me about|tell me more|what does|details|describe|ingredients|special about|features|what is the)\b",
        ),
        ("greeting", r"\b(hi|hello|hey|joined|evening|morning|love this|thank|thanks|first time)\b"),
    ]
]


def classify_intent(text: str) -> str:
    """The intent of a viewer comment by keyword rules (``off_topic`` when nothing matches).

    >>> classify_intent("is M still in stock?"), classify_intent("my order LM123456 arrived broken")
    ('stock', 'complaint')
    """
    for intent, pattern in _RULES:
        if pattern.search(text):
            return intent
    return "off_topic"
