"""The simulator's tool backends, one per ``sim.<fn>`` backend name of the shipped harness.

Each is ``fn(world, args) -> JSON-able result`` and reads the world's catalog; a bad id or
region raises :class:`~harnessctl.runtime.environment.ToolError` with a message the model can
act on. Fault injection is not here: the :class:`~harnessctl.sim.world.World` applies it around
these functions.

>>> from harnessctl.sim.world import World
>>> get_stock(World(), {"product_id": "P001"})["variants"]
[{'name': '30 ml', 'stock': 24}]
"""

from __future__ import annotations

import re
from typing import Any

from harnessctl.harness.backends import register_backend
from harnessctl.runtime.environment import ToolError
from harnessctl.sim.facts import is_active, ticket_id

_WORD_RE = re.compile(r"[a-z0-9]+")


def _product(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    pid = args.get("product_id")
    if not pid:
        raise ToolError('product_id is required, e.g. "P012" (the one on screen is in the context)')
    try:
        return world.catalog.product(str(pid))
    except KeyError as e:
        raise ToolError(str(e.args[0])) from None


@register_backend("sim.search_products")
def search_products(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Products matching the viewer's words (name, description, attributes), best first, at most 5."""
    words = set(_WORD_RE.findall(str(args.get("query", "")).lower()))
    category = args.get("category")
    scored = []
    for i, p in enumerate(world.catalog.products):
        if category and p["category"] != category:
            continue
        name_words = set(_WORD_RE.findall(p["name"].lower()))
        other = set(
            _WORD_RE.findall(" ".join([p["description"], p["category"], *map(str, p["attributes"].values())]).lower())
        )
        score = 3 * len(words & name_words) + len(words & other)
        if score:
            scored.append((-score, i, p))
    scored.sort(key=lambda t: (t[0], t[1]))
    return {
        "results": [
            {"id": p["id"], "name": p["name"], "category": p["category"], "live_price": p["live_price"]}
            for _, _, p in scored[:5]
        ]
    }


@register_backend("sim.get_product")
def get_product(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The product card: prices, attributes, variants, compliance note, size guide."""
    p = _product(world, args)
    card: dict[str, Any] = {
        "id": p["id"],
        "name": p["name"],
        "category": p["category"],
        "brand": p.get("brand", ""),
        "description": p.get("description", ""),
        "list_price": p["list_price"],
        "live_price": p["live_price"],
        "attributes": dict(p.get("attributes") or {}),
        "variants": [v["name"] for v in p["variants"]],
    }
    if p.get("compliance"):
        card["compliance"] = {"kind": p["compliance"]["kind"], "disclaimer": p["compliance"]["disclaimer"]}
    if p.get("size_guide"):
        card["size_guide"] = [dict(row) for row in p["size_guide"]]
    return card


@register_backend("sim.get_stock")
def get_stock(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Units left per variant; with ``variant``, that one is named in ``requested``."""
    p = _product(world, args)
    out: dict[str, Any] = {
        "product_id": p["id"],
        "variants": [{"name": v["name"], "stock": v["stock"]} for v in p["variants"]],
        "total": sum(int(v["stock"]) for v in p["variants"]),
    }
    want = args.get("variant")
    if want:
        names = {v["name"].lower(): v["name"] for v in p["variants"]}
        if str(want).strip().lower() not in names:
            raise ToolError(
                f"{p['id']} has no variant {want!r}; variants are {', '.join(v['name'] for v in p['variants'])}"
            )
        out["requested"] = names[str(want).strip().lower()]
    return out


@register_backend("sim.get_promotions")
def get_promotions(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Active coupons that apply to the product, and its flash sale if one is running."""
    p = _product(world, args)
    cat = world.catalog
    coupons = []
    for c in cat.promotions_for(p["id"]):
        if not is_active(c.get("ends_at"), cat.now):
            continue
        coupon = {"code": c["code"]}
        for k in ("percent_off", "amount_off"):
            if c.get(k) is not None:
                coupon[k] = c[k]
        coupon.update(
            {
                "min_spend": c.get("min_spend", 0.0),
                "per_viewer_limit": c.get("per_viewer_limit"),
                "ends_at": c.get("ends_at"),
            }
        )
        coupons.append(coupon)
    flash = cat.flash_sale_for(p["id"])
    flash_out = None
    if flash and is_active(flash["ends_at"], cat.now):
        flash_out = {
            "price": flash["price"],
            "ends_at": flash["ends_at"],
            "per_viewer_limit": flash.get("per_viewer_limit"),
        }
    return {
        "product_id": p["id"],
        "live_price": p["live_price"],
        "as_of": cat.now,
        "coupons": coupons,
        "flash_sale": flash_out,
    }


@register_backend("sim.estimate_shipping")
def estimate_shipping(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Delivery days, fee and the free-shipping threshold for a region (or a city in it)."""
    cat = world.catalog
    try:
        region = cat.region(str(args.get("region", "")))
    except KeyError as e:
        raise ToolError(str(e.args[0])) from None
    if args.get("product_id"):
        _product(world, args)  # a bad id is an error even where the rule does not need it
    rule = cat.shipping[region]
    return {
        "region": region,
        "days_min": rule["days_min"],
        "days_max": rule["days_max"],
        "fee": rule["fee"],
        "free_over": rule["free_over"],
    }


@register_backend("sim.get_order_status")
def get_order_status(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Where an order is: status, dates, carrier and what was ordered."""
    oid = str(args.get("order_id", "")).strip().upper()
    try:
        o = world.catalog.order(oid)
    except KeyError as e:
        raise ToolError(str(e.args[0])) from None
    name = (
        world.catalog.product(o["product_id"])["name"]
        if world.catalog.has_product(o["product_id"])
        else o["product_id"]
    )
    return {
        "order_id": o["id"],
        "status": o["status"],
        "placed": o["placed"],
        "eta": o["eta"],
        "carrier": o["carrier"],
        "item": name,
    }


@register_backend("sim.get_return_policy")
def get_return_policy(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The return window and condition of the product's category."""
    p = _product(world, args)
    try:
        policy = world.catalog.return_policy(p["id"])
    except KeyError as e:
        raise ToolError(str(e.args[0])) from None
    return {"product_id": p["id"], "category": p["category"], "days": policy["days"], "condition": policy["condition"]}


@register_backend("sim.handoff_to_human")
def handoff_to_human(world: Any, args: dict[str, Any]) -> dict[str, Any]:
    """Open a support ticket for the viewer; a person follows up."""
    urgency = str(args.get("urgency") or "normal")
    if urgency not in ("low", "normal", "high"):
        raise ToolError(f"urgency must be low, normal or high, not {urgency!r}")
    return {
        "ticket": ticket_id(world.viewer_handle),
        "urgency": urgency,
        "queue": "live support",
        "wait_minutes": 5 if urgency == "high" else 15,
    }


#: Every backend this module provides, by name (what the shipped harness binds to).
SIM_BACKENDS = (
    "sim.search_products",
    "sim.get_product",
    "sim.get_stock",
    "sim.get_promotions",
    "sim.estimate_shipping",
    "sim.get_order_status",
    "sim.get_return_policy",
    "sim.handoff_to_human",
)
