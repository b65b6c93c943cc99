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
from harnessctl.sim.task import INTENT_SKILL, INTENTS, fact_sources, task_calls

_FORBIDDEN_ALWAYS_COMPLIANCE = ["100% safe", "guaranteed"]


def expectation_for(
    intent: str, slots: dict[str, Any], catalog: Catalog, context: CaseContext, query: str = ""
) -> Expectation:
    """What a correct reply to an ``intent`` comment needs, given its slots (by key): the calls
    from :func:`~harnessctl.sim.task.task_calls`, the facts from the catalog, said as
    :mod:`harnessctl.sim.facts` says them."""
    if intent not in INTENTS:
        raise ValueError(f"unknown intent {intent!r}; intents are {', '.join(INTENTS)}")
    skill = INTENT_SKILL[intent]
    pid = slots.get("product_id")
    p = catalog.product(pid) if pid else None
    exp = Expectation(skill=skill)
    now = catalog.now
    if intent == "shipping":
        slots = {**slots, "region": catalog.region(slots["region"])}
    spec_calls = task_calls(intent, slots, query)
    exp.calls = [ExpectedCall(c.tool, dict(c.accept), required=c.required, round=c.round) for c in spec_calls]
    if intent == "greeting":
        handle = (context.viewer or {}).get("handle")
        exp.facts = [handle] if handle else []
    elif intent == "product_info":
        assert p is not None
        exp.facts = [p["name"]]
    elif intent in ("price", "promotion"):
        assert p is not None
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
            v = next(v for v in p["variants"] if v["name"].lower() == variant.lower())
            exp.facts = [F.units_phrase(v["stock"])]
            if v["stock"] <= 0:
                alt = F.closest_in_stock(p["variants"], v["name"])
                if alt:
                    exp.facts.append(alt)
        else:
            exp.facts = [F.units_phrase(sum(v["stock"] for v in p["variants"]))]
    elif intent == "size_advice":
        assert p is not None
        size = (
            F.size_for_height(p.get("size_guide") or [], float(slots["height_cm"])) if slots.get("height_cm") else None
        )
        exp.facts = [F.size_phrase(size)] if size else []
    elif intent == "shipping":
        rule = catalog.shipping[slots["region"]]
        fee = "free shipping" if not rule["fee"] else F.money(rule["fee"])
        exp.facts = [F.days_range(rule["days_min"], rule["days_max"]), fee]
    elif intent == "returns":
        assert p is not None
        exp.facts = [F.days_phrase(catalog.return_policy(p["id"])["days"])]
    elif intent == "order_status":
        oid = slots.get("order_id")
        if oid and _has_order(catalog, oid):
            o = catalog.order(oid)
            exp.facts = [o["id"], F.status_phrase(o["status"]), F.day(o["eta"])]
        elif not oid:
            exp.any_facts = [["order number"]]
    elif intent == "comparison":
        assert p is not None
        q = catalog.product(slots["other_id"])
        exp.facts = [F.money(p["live_price"]), F.money(q["live_price"])]
        exp.forbidden = ["the best", "better than"]
    elif intent == "compliance_sensitive":
        assert p is not None
        comp = p.get("compliance")
        if comp:
            exp.facts = [comp["disclaimer"]]
            exp.forbidden = list(comp.get("forbidden_claims") or []) + _FORBIDDEN_ALWAYS_COMPLIANCE
        else:
            exp.forbidden = ["cures", "treats"] + _FORBIDDEN_ALWAYS_COMPLIANCE
    elif intent in ("complaint", "human_request"):
        exp.handoff = True
        exp.facts = [F.ticket_id((context.viewer or {}).get("handle") or "viewer")]
    elif intent == "off_topic":
        if context.product_name:
            exp.facts = [context.product_name]
    elif intent == "flash_sale":
        assert p is not None
        flash = catalog.flash_sale_for(p["id"])
        if flash and F.is_active(flash["ends_at"], now):
            exp.facts = [
                F.money(flash["price"]),
                F.when(flash["ends_at"], now),
                F.left_phrase(sum(v["stock"] for v in p["variants"])),
            ]
            if flash.get("per_viewer_limit"):
                exp.facts.append(F.limit_phrase(flash["per_viewer_limit"]))
    exp.fact_sources = fact_sources(intent, exp.facts, spec_calls)
    return exp


def _has_order(catalog: Catalog, oid: str) -> bool:
    try:
        catalog.order(oid)
    except KeyError:
        return False
    return True
