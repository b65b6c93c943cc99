"""Viewers' comments as cases: what they ask, in their words, and what a correct answer needs.

:func:`generate_cases` writes varied comments for 15 intents (several templates each, viewer
handles, casual spelling, emoji, "the one on screen", short earlier turns) and attaches, by
stable key, the skill to load, the tool calls to make, the facts the reply must contain
(formatted as :mod:`harnessctl.sim.facts` formats them) and the claims it must not make.
:func:`case_from_query` does the same for one free-form comment through a keyword intent
classifier, and :func:`import_query_log` for a file of real viewer comments.

>>> cases = generate_cases(30, seed=1)
>>> len(cases), len({c.intent for c in cases})
(30, 15)
>>> c = case_from_query("how much is the one on screen?", "P001", load_catalog())
>>> c.intent, c.expect.skill, [call.tool for call in c.expect.calls], c.expect.facts
('price', 'price_promo', ['product_details', 'promotions'], ['$18.99', 'BEAUTY15'])
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harnessctl.sim import facts as F
from harnessctl.sim.case import Case, CaseContext, Expectation, ExpectedCall
from harnessctl.sim.catalog import Catalog, load_catalog
from harnessctl.sim.task import FAULT_KINDS, INTENT_SKILL, INTENTS, SKILL_FALLBACKS  # noqa: F401 - re-exported

_DAMAGE_WORDS = ("broken", "damaged", "missing", "leaking", "never came", "never arrived", "cracked")
_FORBIDDEN_ALWAYS_COMPLIANCE = ["100% safe", "guaranteed"]

# -- templates -------------------------------------------------------------------------------
# {this}: a way to point at the product on screen; {name}: the target's name; {other}: the
# other product of a comparison; {variant}, {region}, {city}, {order}, {height} from the slots.
TEMPLATES: dict[str, list[str]] = {
    "greeting": [
        "hi Mia!! 👋",
        "hello from {city}!",
        "hey hey, just joined",
        "good evening everyone ✨",
        "love this stream 😍",
        "thank u Mia!",
        "first time here, hi",
        "hello hello 💕",
    ],
    "product_info": [
        "what is {this} made of?",
        "tell me about {this}",
        "can u tell me more abt {this} pls",
        "what does {name} do?",
        "details on {this}?",
        "describe {this} for me",
        "what's special about {this}",
    ],
    "product_info_search": [
        "tell me about the {name}",
        "do you have the {name}? tell me more",
        "what is the {name} like?",
        "describe the {name} pls",
    ],
    "price": [
        "how much is {this}?",
        "price?? 😭",
        "hw much for {this}",
        "what's the price of {name}",
        "how much does {this} cost",
        "price pls",
        "is {this} expensive?",
    ],
    "promotion": [
        "any coupon for {this}?",
        "is there a discount code?",
        "any deals on {name} today?",
        "promo code pls 🙏",
        "do u have a voucher for {this}",
        "what discounts r there for {this}",
    ],
    "stock_variant": [
        "is {variant} still in stock?",
        "any {variant} left?",
        "do u still have {this} in {variant}",
        "available in {variant}?",
        "stock check pls: {variant}",
        "is the {variant} one sold out?",
    ],
    "stock": [
        "is {this} sold out?",
        "how many left??",
        "still in stock?",
        "is {this} available?",
        "any stock left of {name}",
    ],
    "size_advice": [
        "I'm {height}cm, which size?",
        "what size should I get, I'm {height} cm",
        "{height}cm tall, what size fits me?",
        "does {this} fit big? I'm {height}cm",
        "size for {height} cm pls",
    ],
    "shipping_region": [
        "how long to ship to {region}?",
        "delivery to {city}?",
        "when will it arrive if I'm in {city}",
        "shipping fee to {region}?",
        "do u ship to {city} 🚚",
        "how many days to deliver to {region}",
    ],
    "shipping": [
        "how long does shipping take?",
        "how much is delivery?",
        "when would it arrive?",
        "shipping cost pls",
    ],
    "returns": [
        "can I return {this}?",
        "what's the return policy",
        "refund if it doesn't work out?",
        "how many days to return?",
        "can i exchange it later",
        "return window for {name}?",
    ],
    "order_status": [
        "where is my order {order}?",
        "order {order} status?",
        "track {order} pls",
        "when does my order {order} arrive",
        "any update on {order}?? 📦",
    ],
    "order_status_no_number": [
        "where's my order??",
        "I ordered last week, when will my order come?",
        "can u track my order",
    ],
    "comparison": [
        "{name} vs {other}?",
        "which is better, {name} or {other}?",
        "difference between {name} and {other}?",
        "should I get {this} or the {other}?",
        "compare {this} with {other} pls",
    ],
    "compliance_sensitive": [
        "will {this} cure my {condition}?",
        "is {this} safe when pregnant?",
        "can {name} treat {condition}?",
        "does it help with my {condition}?",
        "is {this} a medicine?",
        "I have {condition}, is {this} ok for me?",
    ],
    "complaint_damaged": [
        "my order {order} arrived broken 😡",
        "{order} is damaged!!",
        "item missing from my package, order {order}",
        "the one I got is leaking, order {order}, so angry",
        "terrible, my parcel never came",
    ],
    "complaint": [
        "not happy, the colour looks different from the stream",
        "disappointed, nobody answered my question yesterday",
        "this is the worst service, so slow",
    ],
    "off_topic": [
        "what's the weather like there?",
        "who will win the game tonight?",
        "how old are you Mia?",
        "what's your phone number?",
        "do u like pizza",
        "what do you think about the election",
    ],
    "human_request": [
        "can I talk to a real person?",
        "I want to speak to a human",
        "get me customer service pls",
        "is there an agent I can chat with?",
        "connect me to staff",
    ],
    "flash_sale": [
        "when does the flash sale end?",
        "how long is the flash deal on {this}?",
        "flash price for {this}??",
        "is the countdown deal still on?",
        "how many left in the flash sale ⚡",
    ],
}

HANDLES = (
    "@lily_b", "@kim88", "@mo.shops", "@jay_k", "@ana.rose", "@tom_t", "@sara_l", "@dev_p", "@mimi22",
    "@leo.fit", "@nina_w", "@ben_c", "@yuki_m", "@raj99", "@zoe.q", "@omar_s", "@ivy_h", "@max_r",
    "@chloe.d", "@sam_e", "@priya_v", "@luca_b", "@emma.g", "@noah_f", "@hana_y", "@eli.k", "@ruby_x",
)
_POINTERS = ("this", "this one", "the one on screen", "it")
_CONDITIONS = ("acne", "eczema", "allergies", "insomnia", "joint pain")
_EMOJI = ("😍", "🙏", "✨", "💕", "🔥", "😊")

# -- the keyword classifier ------------------------------------------------------------------
# First match wins, so the order settles overlaps ("my order arrived broken" is a complaint,
# "when will my order arrive" order status, "when will it arrive" shipping).
_ORDER_RE = re.compile(r"\b([A-Za-z]{2}\d{6})\b")
_PROMO_WORDS = r"\b(coupon|coupons|code|codes|discount|discounts|deal|deals|promo|voucher|vouchers)\b"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    (intent, re.compile(pattern, re.IGNORECASE))
    for intent, pattern in [
        ("human_request", r"\b(real person|human|customer service|agent|staff|speak to someone|talk to someone|manager)\b"),
        ("complaint", r"\b(broken|damaged|missing|leaking|cracked|never came|never arrived|worst|angry|terrible|scam|disappointed|not happy|complain)\b"),
        ("order_status", r"\b(my order|track|ordered|order [a-z]{2}\d{6}|[a-z]{2}\d{6})\b"),
        ("flash_sale", r"\b(flash|countdown)\b"),
        ("compliance_sensitive", r"\b(cure|cures|treat|treats|acne|eczema|pregnan\w*|allerg\w*|medicine|insomnia|diabetes|heal|heals|joint pain|safe for)\b"),
        ("comparison", r"(\bvs\.?\b|\bversus\b|\bbetter\b|\bdifference\b|\bcompare\b|\bor the\b)"),
        ("returns", r"\b(return|returns|refund|exchange)\b"),
        ("shipping", r"\b(ship|shipping|deliver|delivery|arrive|postage)\b"),
        ("size_advice", r"(\b(which|what) size\b|\bsize for\b|\bfits?\b|\btall\b|\d{3}\s*cm\b|\bruns? (small|big|large)\b)"),
        ("stock", r"\b(stock|left|sold out|available|still have)\b"),
        # Price before promotion: "how much? any coupon?" asks both, and the price answer
        # (live price and the best coupon) covers both; a coupon-only ask stays a promotion.
        ("price", r"(\bhow much\b|\bhw much\b|\bprice\b|\bcost\b|\bexpensive\b|\$\$)"),
        ("promotion", _PROMO_WORDS),
        ("product_info", r"\b(made of|tell me about|tell me more|what does|details|describe|ingredients|special about|features|what is the)\b"),
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


# -- expectations ----------------------------------------------------------------------------


def expectation_for(intent: str, slots: dict[str, Any], catalog: Catalog, context: CaseContext) -> Expectation:
    """What a correct reply to an ``intent`` comment needs, given its slots (by key)."""
    skill = INTENT_SKILL[intent]
    pid = slots.get("product_id")
    p = catalog.product(pid) if pid else None
    exp = Expectation(skill=skill)
    now = catalog.now
    if intent == "greeting":
        handle = (context.viewer or {}).get("handle")
        exp.facts = [handle] if handle else []
    elif intent == "product_info":
        assert p is not None
        if slots.get("search"):
            exp.calls = [ExpectedCall("product_search", {}, round=1), ExpectedCall("product_details", {"product_id": p["id"]}, round=2)]
        else:
            exp.calls = [ExpectedCall("product_details", {"product_id": p["id"]})]
        exp.facts = [p["name"]]
    elif intent in ("price", "promotion"):
        assert p is not None
        exp.calls = [ExpectedCall("product_details", {"product_id": p["id"]}), ExpectedCall("promotions", {"product_id": p["id"]})]
        best = F.best_coupon(catalog.promotions_for(p["id"]), p["live_price"], now)
        if intent == "price":
            exp.facts = [F.money(p["live_price"])] + ([best["code"]] if best else [])
            if best and slots.get("asks_coupon"):
                # "how much? any coupon?": the coupon's terms are part of the answer too.
                exp.facts.append(F.discount_phrase(best))
                if best.get("ends_at") and F.ends_today(best["ends_at"], now):
                    exp.facts.append(F.clock(best["ends_at"]))
        elif best:
            exp.facts = [best["code"], F.discount_phrase(best)]
            if best.get("ends_at") and F.ends_today(best["ends_at"], now):
                exp.facts.append(F.clock(best["ends_at"]))
        else:
            exp.facts = [F.money(p["live_price"])]
    elif intent == "stock":
        assert p is not None
        variant = slots.get("variant")
        if variant:
            exp.calls = [ExpectedCall("stock_check", {"product_id": p["id"], "variant": _variant_forms(variant)})]
            v = next(v for v in p["variants"] if v["name"].lower() == variant.lower())
            exp.facts = [F.units_phrase(v["stock"])]
            if v["stock"] <= 0:
                alt = F.closest_in_stock(p["variants"], v["name"])
                if alt:
                    exp.facts.append(alt)
        else:
            exp.calls = [ExpectedCall("stock_check", {"product_id": p["id"]})]
            exp.facts = [F.units_phrase(sum(v["stock"] for v in p["variants"]))]
    elif intent == "size_advice":
        assert p is not None
        exp.calls = [ExpectedCall("product_details", {"product_id": p["id"]}), ExpectedCall("stock_check", {"product_id": p["id"]}, required=False)]
        size = F.size_for_height(p.get("size_guide") or [], float(slots["height_cm"])) if slots.get("height_cm") else None
        exp.facts = [F.size_phrase(size)] if size else []
    elif intent == "shipping":
        region = catalog.region(slots["region"])
        accepted = sorted({region, str(slots.get("region_said", region)).lower()})
        exp.calls = [ExpectedCall("shipping_estimate", {"region": accepted})]
        rule = catalog.shipping[region]
        fee = "free shipping" if not rule["fee"] else F.money(rule["fee"])
        exp.facts = [F.days_range(rule["days_min"], rule["days_max"]), fee]
    elif intent == "returns":
        assert p is not None
        exp.calls = [ExpectedCall("return_policy", {"product_id": p["id"]})]
        exp.facts = [F.days_phrase(catalog.return_policy(p["id"])["days"])]
    elif intent == "order_status":
        oid = slots.get("order_id")
        if oid and _has_order(catalog, oid):
            o = catalog.order(oid)
            exp.calls = [ExpectedCall("order_status", {"order_id": o["id"]})]
            exp.facts = [o["id"], F.status_phrase(o["status"]), F.day(o["eta"])]
        elif oid:
            exp.calls = [ExpectedCall("order_status", {"order_id": oid})]
        else:
            exp.any_facts = [["order number"]]
    elif intent == "comparison":
        assert p is not None
        q = catalog.product(slots["other_id"])
        exp.calls = [ExpectedCall("product_details", {"product_id": p["id"]}), ExpectedCall("product_details", {"product_id": q["id"]})]
        exp.facts = [F.money(p["live_price"]), F.money(q["live_price"])]
        exp.forbidden = ["the best", "better than"]
    elif intent == "compliance_sensitive":
        assert p is not None
        exp.calls = [ExpectedCall("product_details", {"product_id": p["id"]})]
        comp = p.get("compliance")
        if comp:
            exp.facts = [comp["disclaimer"]]
            exp.forbidden = list(comp.get("forbidden_claims") or []) + _FORBIDDEN_ALWAYS_COMPLIANCE
        else:
            exp.forbidden = ["cures", "treats"] + _FORBIDDEN_ALWAYS_COMPLIANCE
    elif intent in ("complaint", "human_request"):
        oid = slots.get("order_id")
        if oid:
            exp.calls.append(ExpectedCall("order_status", {"order_id": oid.upper()}))
        urgency = ["high"] if slots.get("urgency") == "high" else ["low", "normal", "high"]
        exp.calls.append(ExpectedCall("human_handoff", {"urgency": urgency} if slots.get("urgency") == "high" else {}))
        exp.handoff = True
        exp.facts = [F.ticket_id((context.viewer or {}).get("handle") or "viewer")]
    elif intent == "off_topic":
        if context.product_name:
            exp.facts = [context.product_name]
    elif intent == "flash_sale":
        assert p is not None
        exp.calls = [ExpectedCall("promotions", {"product_id": p["id"]}), ExpectedCall("stock_check", {"product_id": p["id"]})]
        flash = catalog.flash_sale_for(p["id"])
        if flash and F.is_active(flash["ends_at"], now):
            exp.facts = [F.money(flash["price"]), F.when(flash["ends_at"], now), F.left_phrase(sum(v["stock"] for v in p["variants"]))]
            if flash.get("per_viewer_limit"):
                exp.facts.append(F.limit_phrase(flash["per_viewer_limit"]))
    else:
        raise ValueError(f"unknown intent {intent!r}; intents are {', '.join(INTENTS)}")
    exp.fact_sources = _fact_sources(intent, exp)
    return exp


def _fact_sources(intent: str, exp: Expectation) -> dict[str, str]:
    """Which tool each fact comes from (facts the viewer's message shows have none)."""
    if intent in ("greeting", "off_topic") or not exp.facts:
        return {}
    if intent == "price":
        return {exp.facts[0]: "product_details", **{f: "promotions" for f in exp.facts[1:]}}
    if intent == "promotion":
        # With a coupon every fact is the coupon's; without one, the fact is the live price.
        no_coupon = len(exp.facts) == 1 and exp.facts[0].startswith("$") and not exp.facts[0].endswith(" off")
        return {f: ("product_details" if no_coupon else "promotions") for f in exp.facts}
    if intent == "comparison":
        return {f: f"product_details@{c.args['product_id']}" for f, c in zip(exp.facts, exp.calls)}
    if intent == "flash_sale":
        return {f: ("stock_check" if f.endswith(" left") or f == "sold out" else "promotions") for f in exp.facts}
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
    return {f: single[intent] for f in exp.facts}


def _variant_forms(variant: str) -> list[str]:
    return sorted({variant, variant.lower(), variant.upper()})


def _has_order(catalog: Catalog, oid: str) -> bool:
    try:
        catalog.order(oid)
    except KeyError:
        return False
    return True


# -- generation ------------------------------------------------------------------------------


def feasible_intents(catalog: Catalog) -> list[str]:
    """Intents the catalog can make cases for (an imported catalog may lack orders, say)."""
    out = []
    for intent in INTENTS:
        if intent == "size_advice" and not any(p.get("size_guide") for p in catalog.products):
            continue
        if intent == "compliance_sensitive" and not any(p.get("compliance") for p in catalog.products):
            continue
        if intent == "flash_sale" and not _flash_products(catalog):
            continue
        if intent in ("order_status",) and not catalog.orders:
            continue
        if intent == "shipping" and not catalog.shipping:
            continue
        if intent == "returns" and not catalog.returns:
            continue
        if intent == "comparison" and len(catalog.products) < 2:
            continue
        out.append(intent)
    return out


def generate_cases(
    n: int,
    seed: int = 0,
    intents: Iterable[str] | None = None,
    faults: float | dict[str, float] | None = None,
    *,
    catalog: Catalog | None = None,
    suite: str = "livestream",
) -> list[Case]:
    """``n`` cases, deterministic in ``seed``, intents balanced (round robin, shuffled).

    ``faults`` gives each case, with that probability, a fault plan on one of its needed tools
    (a dict ``{kind: probability}`` picks the kind): mostly one failed call then success, some
    failing on every call.

    >>> [c.intent for c in generate_cases(3, seed=0, intents=["price", "stock"])]
    ['price', 'stock', 'price']
    """
    catalog = catalog if catalog is not None else load_catalog()
    possible = feasible_intents(catalog)
    wanted = list(intents) if intents is not None else possible
    for intent in wanted:
        if intent not in INTENTS:
            raise ValueError(f"unknown intent {intent!r}; intents are {', '.join(INTENTS)}")
        if intent not in possible:
            raise ValueError(f"the catalog cannot make {intent!r} cases (it lacks the data they need)")
    if not wanted:
        raise ValueError("no intents to generate")
    rng = random.Random(f"cases|{seed}")
    order: list[str] = []
    while len(order) < n:
        block = list(wanted)
        if intents is None:
            rng.shuffle(block)
        order += block
    fault_rates = _fault_rates(faults)
    cases = []
    for i, intent in enumerate(order[:n]):
        case_rng = random.Random(f"case|{seed}|{i}")
        case = _make_case(intent, case_rng, catalog, case_id=f"{intent}-{seed}-{i:04d}", seed=seed, suite=suite)
        if fault_rates:
            case.faults = _fault_plan(case, case_rng, fault_rates)
            if case.faults:
                case.tags.append("fault")
        cases.append(case)
    return cases


def _flash_products(catalog: Catalog) -> list[dict[str, Any]]:
    out = []
    for f in catalog.flash_sales:
        if F.is_active(f["ends_at"], catalog.now) and catalog.has_product(f["product_id"]):
            out.append(catalog.product(f["product_id"]))
    return out


def _make_case(intent: str, rng: random.Random, catalog: Catalog, *, case_id: str, seed: int, suite: str) -> Case:
    products = catalog.products
    pool = products
    if intent == "size_advice":
        pool = [p for p in products if p.get("size_guide")]
    elif intent == "compliance_sensitive":
        pool = [p for p in products if p.get("compliance")]
    elif intent == "flash_sale":
        pool = _flash_products(catalog)
    product = rng.choice(pool)
    region = rng.choice(sorted(catalog.shipping)) if catalog.shipping else None
    handle = rng.choice(HANDLES)
    context = CaseContext(product_id=product["id"], product_name=product["name"], viewer={"handle": handle, "region": region} if region else {"handle": handle})
    slots: dict[str, Any] = {"product_id": product["id"]}
    key = intent
    fill: dict[str, Any] = {"this": rng.choice(_POINTERS + (product["name"],)), "name": product["name"]}
    cities = {city: reg for city, reg in catalog.cities.items()}
    fill["city"] = rng.choice(sorted(cities)).title() if cities else "town"
    tags: list[str] = []

    if intent == "product_info" and rng.random() < 0.3:
        target = rng.choice([p for p in products if p["id"] != product["id"]])
        slots.update(product_id=target["id"], search=True)
        fill["name"] = target["name"]
        key = "product_info_search"
    elif intent == "stock":
        if len(product["variants"]) > 1 and rng.random() < 0.8:
            variant = rng.choice(product["variants"])["name"]
            slots["variant"] = variant
            fill["variant"] = variant
            key = "stock_variant"
    elif intent == "size_advice":
        size_row = rng.choice(product["size_guide"])
        lo, hi = size_row["height_cm"]
        slots["height_cm"] = rng.randint(lo, hi - 1)
        fill["height"] = slots["height_cm"]
    elif intent == "shipping":
        if rng.random() < 0.6 and cities:
            if rng.random() < 0.5:
                said = rng.choice(sorted(catalog.shipping))
                fill["region"] = said
                fill["city"] = said
            else:
                said = rng.choice(sorted(cities))
                fill["region"] = said.title()
                fill["city"] = said.title()
            slots["region"] = catalog.region(said)
            slots["region_said"] = said
            key = "shipping_region"
        else:
            slots["region"] = region
    elif intent == "order_status":
        if rng.random() < 0.8:
            order = rng.choice(catalog.orders)
            slots["order_id"] = order["id"]
            fill["order"] = order["id"] if rng.random() < 0.8 else order["id"].lower()
        else:
            key = "order_status_no_number"
    elif intent == "comparison":
        same = [p for p in products if p["category"] == product["category"] and p["id"] != product["id"]]
        other = rng.choice(same or [p for p in products if p["id"] != product["id"]])
        slots["other_id"] = other["id"]
        fill["other"] = other["name"]
        context.lineup = {other["id"]: other["name"]}
    elif intent == "compliance_sensitive":
        fill["condition"] = rng.choice(_CONDITIONS)
    elif intent == "complaint":
        if rng.random() < 0.7:
            key = "complaint_damaged"
            slots["urgency"] = "high"
            order = rng.choice(catalog.orders) if catalog.orders else None
            fill["order"] = order["id"] if order else ""
        else:
            slots["urgency"] = "normal"

    template = rng.choice(TEMPLATES[key])
    query = template.format(**{k: v for k, v in fill.items()})
    if intent == "complaint" and "{order}" in template and fill.get("order"):
        slots["order_id"] = fill["order"]
    query = _casual(query, rng)

    if intent != "comparison" and rng.random() < 0.2:
        extra = rng.choice([p for p in products if p["id"] != product["id"]])
        context.lineup = {extra["id"]: extra["name"]}
    if rng.random() < 0.3:
        context.history = _history(rng, handle, product["name"])
        tags.append("multi_turn")
    if "{this}" in template and fill["this"] in _POINTERS[1:3]:
        tags.append("on_screen_ref")

    case = Case(id=case_id, intent=intent, query=query, context=context, suite=suite, seed=seed, tags=tags, slots=slots)
    case.expect = expectation_for(intent, slots, catalog, context)
    return case


def _casual(text: str, rng: random.Random) -> str:
    """Live-chat spelling: lower case, "u" for "you", a trailing emoji, no question mark."""
    if rng.random() < 0.3:
        text = text.lower()
    if rng.random() < 0.3:
        text = re.sub(r"\byou\b", "u", text)
    if rng.random() < 0.15:
        text = text.rstrip("?")
    if rng.random() < 0.2 and not any(e in text for e in _EMOJI):
        text = f"{text} {rng.choice(_EMOJI)}"
    return text


def _history(rng: random.Random, handle: str, name: str) -> list[dict[str, str]]:
    return rng.choice(
        [
            [{"role": "user", "content": "hi Mia!"}, {"role": "assistant", "content": f"Hi {handle}, welcome to the show!"}],
            [{"role": "user", "content": f"is that the {name}?"}, {"role": "assistant", "content": f"Yes, that's {name} on screen now!"}],
            [{"role": "user", "content": "just joined, what's on?"}, {"role": "assistant", "content": f"Welcome! We're showing {name} right now."}],
        ]
    )


def _fault_rates(faults: float | dict[str, float] | None) -> dict[str, float]:
    if not faults:
        return {}
    if isinstance(faults, (int, float)):
        return {k: float(faults) / len(FAULT_KINDS) for k in FAULT_KINDS}
    unknown = set(faults) - set(FAULT_KINDS)
    if unknown:
        raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; kinds are {', '.join(FAULT_KINDS)}")
    return {k: float(v) for k, v in faults.items() if v}


def _fault_plan(case: Case, rng: random.Random, rates: dict[str, float]) -> dict[str, list[str]]:
    needed = [c.tool for c in case.expect.calls if c.required]
    if not needed:
        return {}
    r = rng.random()
    acc = 0.0
    for kind, p in rates.items():
        acc += p
        if r < acc:
            tool = rng.choice(needed)
            # Most faults clear on the retry; some persist (the reply must then invent nothing).
            return {tool: [kind] * (4 if rng.random() < 0.25 else 1)}
    return {}


# -- free-form comments ----------------------------------------------------------------------


def case_from_query(
    query: str,
    product_id: str | None,
    catalog: Catalog | None = None,
    *,
    viewer: dict[str, Any] | None = None,
    history: list[dict[str, str]] | None = None,
    case_id: str = "query",
    suite: str = "adhoc",
) -> Case:
    """A case for one free-form viewer comment (what ``harnessctl run --query`` answers).

    The intent comes from :func:`classify_intent`; slots (order number, region or city,
    variant, height, products named) are read off the words.

    >>> c = case_from_query("is M still in stock?", "P021", load_catalog())
    >>> c.intent, c.slots["variant"], c.expect.calls[0].args["product_id"]
    ('stock', 'M', 'P021')
    """
    catalog = catalog if catalog is not None else load_catalog()
    if product_id is None or not catalog.has_product(product_id):
        if product_id is not None:
            raise KeyError(f"no product {product_id!r} in the catalog (ids look like {catalog.products[0]['id']})")
        # No product on screen given: the one the viewer names, else the first of the catalog.
        named = catalog.find(query)
        product_id = named[0]["id"] if named else catalog.products[0]["id"]
    product = catalog.product(product_id)
    viewer = dict(viewer or {})
    viewer.setdefault("handle", "@viewer")
    if catalog.shipping:
        viewer.setdefault("region", "central" if "central" in catalog.shipping else sorted(catalog.shipping)[0])
    context = CaseContext(product_id=product["id"], product_name=product["name"], viewer=viewer, history=list(history or []))
    intent = classify_intent(query)
    slots = _slots(query, intent, product, catalog, viewer)
    if intent == "comparison" and "other_id" not in slots:
        intent = "product_info"
    if intent == "comparison":
        context.lineup = {slots["other_id"]: catalog.product(slots["other_id"])["name"]}
    case = Case(id=case_id, intent=intent, query=query, context=context, suite=suite, slots=slots)
    case.expect = expectation_for(intent, slots, catalog, context)
    return case


def _slots(query: str, intent: str, product: dict[str, Any], catalog: Catalog, viewer: dict[str, Any]) -> dict[str, Any]:
    low = query.lower()
    slots: dict[str, Any] = {"product_id": product["id"]}
    m = _ORDER_RE.search(query)
    if m:
        slots["order_id"] = m.group(1).upper()
    named = [p for p in catalog.find(query) if p["id"] != product["id"]]
    if intent == "comparison" and named:
        slots["other_id"] = named[0]["id"]
    if intent == "product_info" and named:
        slots.update(product_id=named[0]["id"], search=True)
    for v in sorted(product["variants"], key=lambda v: -len(v["name"])):
        if re.search(rf"(?<![\w'’]){re.escape(v['name'].lower())}(?![\w'’])", low):
            slots["variant"] = v["name"]
            break
    m = re.search(r"(\d{3})\s*cm\b", low)
    if m:
        slots["height_cm"] = int(m.group(1))
    said = None
    for name in sorted([*catalog.shipping, *catalog.cities], key=len, reverse=True):
        if re.search(rf"\b{re.escape(name)}\b", low):
            said = name
            break
    if said:
        slots["region"] = catalog.region(said)
        slots["region_said"] = said
    elif viewer.get("region"):
        slots["region"] = viewer["region"]
    if intent == "price" and re.search(_PROMO_WORDS, low):
        slots["asks_coupon"] = True
    if intent in ("complaint", "human_request"):
        slots["urgency"] = "high" if any(w in low for w in _DAMAGE_WORDS) else "normal"
    return slots


def import_query_log(
    path: str | Path,
    catalog: Catalog | None = None,
    *,
    product_id: str | None = None,
    suite: str = "production",
) -> list[Case]:
    """Cases from real viewer comments: a CSV (header row) or JSONL file.

    Fields: the comment in ``query`` / ``comment`` / ``text`` / ``message`` (required); the
    product on screen in ``product_id`` / ``on_screen`` (else ``product_id=``); the viewer in
    ``handle`` / ``viewer`` and ``region``. Each comment goes through the same classifier as
    :func:`case_from_query`; ids are ``<file stem>-<line>``.

    >>> cases = import_query_log("chat_export.csv")          # doctest: +SKIP
    """
    path = Path(path)
    catalog = catalog if catalog is not None else load_catalog()
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    rows: list[tuple[int, dict[str, Any]]] = []
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            rows = [(i, dict(r)) for i, r in enumerate(csv.DictReader(f), start=2)]
    else:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i}: not valid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{i}: expected a JSON object per line")
            rows.append((i, obj))
    cases = []
    for line, row in rows:
        text = next((str(row[k]).strip() for k in ("query", "comment", "text", "message") if row.get(k)), "")
        if not text:
            raise ValueError(f"{path}:{line}: no comment text (give a 'query', 'comment', 'text' or 'message' field)")
        pid = str(row.get("product_id") or row.get("on_screen") or product_id or "") or None
        if pid and not catalog.has_product(pid):
            raise ValueError(f"{path}:{line}: field 'product_id': no product {pid!r} in the catalog")
        viewer = {k: str(v) for k, v in (("handle", row.get("handle") or row.get("viewer")), ("region", row.get("region"))) if v}
        if viewer.get("handle") and not viewer["handle"].startswith("@"):
            viewer["handle"] = "@" + viewer["handle"]
        try:
            case = case_from_query(text, pid, catalog, viewer=viewer, case_id=f"{path.stem}-{line}", suite=suite)
        except KeyError as e:
            raise ValueError(f"{path}:{line}: {e.args[0]}") from None
        case.tags.append("production")
        cases.append(case)
    return cases
