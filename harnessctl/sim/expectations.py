"""What a correct reply to a case needs, by stable key: the skill, the calls with their
acceptable arguments, the facts (as :mod:`harnessctl.sim.facts` writes them) and where each
comes from, and the claims it must not make.

>>> from harnessctl.sim.catalog import load_catalog
>>> from harnessctl.sim.case import CaseContext
>>> e = expectation_for("returns", {"product_id": "P001"}, load_catalog(), CaseContext(product_id="P001"))
>>> [c.tool for c in e.calls], e.facts, e.fact_sources
(['return_policy'], ['14 days'], {'14 days': 'return_policy'})
"""

from __future__ import annotations

from typing import Any

from harnessctl.sim import facts as F
from harnessctl.sim.case import CaseContext, Expectation, ExpectedCall
from harnessctl.sim.catalog import Catalog
from harnessctl.sim.task import INTENT_SKILL, INTENTS

_FORBIDDEN_ALWAYS_COMPLIANCE = ["100% safe", "guaranteed"]


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

