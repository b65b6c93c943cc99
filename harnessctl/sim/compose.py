"""The oracle's replies: written from tool results, fitted to the constraints in force.

Each intent has a composer that turns what the tools returned (:class:`Findings`) into candidate
replies, fullest first, down to the bare facts. :func:`choose_reply` keeps the first candidate
that fits the reply length, the emoji budget and the banned phrases of the harness. When a
tool failed, the composer says it will check — it never fills a gap with a number of its own.

>>> f = Findings(cards={"P001": {"id": "P001", "name": "Glow Serum", "live_price": 18.99, "list_price": 25.9}})
>>> choose_reply(compose("price", {"product_id": "P001"}, {}, f), limit=60, max_emojis=0, banned=[])
'Glow Serum is $18.99 in the live room, down from $25.90!'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harnessctl.runtime.guards import truncate_reply
from harnessctl.runtime.text import count_emojis
from harnessctl.sim import facts as F

_EMOJI_STRIP_RE = re.compile(
    "[\U0001f1e6-\U0001f1ff\U0001f300-\U0001faff\u2600-\u27bf\u2b50\u2b55\U0001f3fb-\U0001f3ff\ufe0f\u200d]"
)


@dataclass
class Findings:
    """What the tools returned in one episode, by product id where it applies."""

    cards: dict[str, dict[str, Any]] = field(default_factory=dict)
    stock: dict[str, dict[str, Any]] = field(default_factory=dict)
    promos: dict[str, dict[str, Any]] = field(default_factory=dict)
    returns: dict[str, dict[str, Any]] = field(default_factory=dict)
    shipping: dict[str, Any] | None = None
    order: dict[str, Any] | None = None
    ticket: dict[str, Any] | None = None
    search: dict[str, Any] | None = None


def choose_reply(candidates: list[str], *, limit: int | None, max_emojis: int | None, banned: list[str]) -> str:
    """The first candidate within ``limit`` characters and ``max_emojis`` emoji that says none
    of the ``banned`` phrases (emoji are dropped from a candidate that has too many)."""
    fitted = []
    for text in candidates:
        if max_emojis is not None and count_emojis(text) > max_emojis:
            text = re.sub(r"\s{2,}", " ", _EMOJI_STRIP_RE.sub("", text)).strip()
        if any(p.lower() in text.lower() for p in banned):
            continue
        fitted.append(text)
        if limit is None or len(text) <= limit:
            return text
    last = fitted[-1] if fitted else "Let me check that for you!"
    return truncate_reply(last, limit) if limit is not None else last


def compose(intent: str, slots: dict[str, Any], context: dict[str, Any], found: Findings) -> list[str]:
    """Candidate replies for ``intent``, fullest first. ``context`` holds what the viewer
    message shows: ``handle``, ``on_screen_id``, ``on_screen_name``."""
    fn = _COMPOSERS.get(intent, _off_topic)
    return fn(slots, context, found)


# -- helpers ---------------------------------------------------------------------------------


def _name(pid: str | None, context: dict[str, Any], found: Findings) -> str | None:
    card = found.cards.get(pid or "")
    if card and card.get("name"):
        return str(card["name"])
    if pid and pid == context.get("on_screen_id"):
        return context.get("on_screen_name")
    return None


def _live_price(pid: str, found: Findings) -> float | None:
    for source in (found.cards.get(pid), found.promos.get(pid)):
        if source and isinstance(source.get("live_price"), (int, float)):
            return float(source["live_price"])
    return None


def _total(stock: dict[str, Any]) -> int | None:
    """Units left over every variant: the tool's own total (a sum written here would be a
    number no tool gave); None when a partial result left it out."""
    if isinstance(stock.get("total"), int):
        return int(stock["total"])
    if _incomplete(stock, "total", "variants"):
        return None
    return sum(int(v.get("stock", 0)) for v in stock.get("variants") or [] if isinstance(v, dict))


def _incomplete(result: dict[str, Any] | None, *keys: str) -> bool:
    """Whether a partial result says any of ``keys`` is missing or cut short."""
    missing = (result or {}).get("incomplete")
    return isinstance(missing, list) and any(k in missing for k in keys)


def _subject(name: str | None, fallback: str = "It") -> str:
    return name or fallback


# -- composers -------------------------------------------------------------------------------


def _greeting(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    h = ctx.get("handle") or "there"
    n = ctx.get("on_screen_name")
    out = []
    if n:
        out += [
            f"Hi {h}, welcome to the show! ✨ {n} is on screen, ask me anything about it.",
            f"Hi {h}, welcome! ✨ Ask me anything about {n}.",
        ]
    out += [f"Hi {h}, welcome to the show! ✨", f"Hi {h}!"]
    return out


def _product_info(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id")
    card = found.cards.get(pid or "")
    if not card or not card.get("name"):
        return ["Let me pull up that product for you, one moment!", "One moment, checking!"]
    name = card["name"]
    desc = card.get("description")
    attrs = [f"{k} {v}" for k, v in (card.get("attributes") or {}).items()][:2]
    out = []
    if desc and len(attrs) == 2:
        out.append(f"{name} is {desc}, with {attrs[0]} and {attrs[1]}.")
    if desc and attrs:
        out.append(f"{name} is {desc}, with {attrs[0]}.")
    if desc:
        out.append(f"{name} is {desc}.")
    if attrs:
        out.append(f"{name}: {attrs[0]}.")
    out.append(f"This is {name}!")
    out.append(name)
    return out


def _price(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    name = _name(pid, ctx, found)
    live = _live_price(pid, found)
    card = found.cards.get(pid) or {}
    best = _best(pid, live, found)
    if live is None:
        if best:
            return [
                f"Let me confirm the price, but code {best['code']} gives {F.discount_phrase(best)}!",
                f"Code {best['code']} gives {F.discount_phrase(best)}.",
            ]
        return ["Let me check the price for you, one moment!", "Checking the price!"]
    p = F.money(live)
    lst = (
        F.money(card["list_price"])
        if isinstance(card.get("list_price"), (int, float)) and card["list_price"] > live
        else None
    )
    n = _subject(name)
    out = []
    asks_coupon = bool(slots.get("asks_coupon"))
    if best:
        code, disc = best["code"], F.discount_phrase(best)
        if asks_coupon:
            # The viewer asked about coupons as well: give the coupon's terms, end time included.
            disc += _ends_today(best, found.promos.get(pid) or {})
        if lst:
            out.append(f"{n} is {p} in the live room (was {lst}), and code {code} gives {disc}!")
        out += [
            f"{n} is {p} live, and code {code} gives {disc}!",
            f"{n} is {p} live, code {code} for {disc}.",
            f"{p} live, code {code} for {disc}.",
            f"{p}, code {code}.",
        ]
    elif asks_coupon and "coupons" in (found.promos.get(pid) or {}):
        if lst:
            out.append(f"{n} is {p} in the live room, down from {lst}; no coupon right now!")
        out += [f"{n} is {p} live, no coupon right now!", f"{p} live, no coupon now."]
    else:
        if lst:
            out.append(f"{n} is {p} in the live room, down from {lst}!")
        out += [f"{n} is {p} live!", f"{p} live!"]
    return out


def _ends_today(coupon: dict[str, Any], promos: dict[str, Any]) -> str:
    """`` until 21:00`` for a coupon that ends today by the promotions tool's clock, else ''."""
    as_of = promos.get("as_of")
    if coupon.get("ends_at") and as_of and F.ends_today(coupon["ends_at"], as_of):
        return f" until {F.clock(coupon['ends_at'])}"
    return ""


def _promotion(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    promos = found.promos.get(pid)
    live = _live_price(pid, found)
    name = _name(pid, ctx, found)
    n = _subject(name, "this one")
    if promos is None or "coupons" not in promos:
        if live is not None:
            return [
                f"{_subject(name)} is {F.money(live)} live; let me check the coupons for you!",
                f"{F.money(live)} live, checking coupons!",
            ]
        return ["Let me check the deals for you, one moment!", "Checking the deals!"]
    best = _best(pid, live, found)
    if not best:
        if live is not None:
            return [
                f"No coupon on {n} right now, but it's {F.money(live)} in the live room!",
                f"No coupon now, it's {F.money(live)} live!",
                f"{F.money(live)} live!",
            ]
        return [f"No coupon on {n} right now, sorry!", "No coupon right now!"]
    code, disc = best["code"], F.discount_phrase(best)
    ends = _ends_today(best, promos)
    return [
        f"Use code {code} for {disc} on {n}{ends}! 🎉",
        f"Use code {code} for {disc}{ends}!",
        f"Code {code}: {disc}{ends}.",
        f"{code}: {disc}{ends}",
    ]


def _best(pid: str, live: float | None, found: Findings) -> dict[str, Any] | None:
    promos = found.promos.get(pid) or {}
    coupons = promos.get("coupons") or []
    if live is None or not isinstance(coupons, list):
        return None
    # The promotions tool lists only active coupons; its clock decides "active" anyway.
    return F.best_coupon([c for c in coupons if isinstance(c, dict) and c.get("code")], live, promos.get("as_of"))


def _stock(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    res = found.stock.get(pid)
    name = _name(pid, ctx, found)
    variants = (res or {}).get("variants")
    if not isinstance(variants, list) or not variants:
        return ["Let me check the stock for you, one moment!", "Checking stock!"]
    want = slots.get("variant")
    if want:
        row = next((v for v in variants if str(v.get("name", "")).lower() == str(want).lower()), None)
        if row is None:
            return ["Let me check that one for you!"]
        vname, n = row["name"], int(row.get("stock", 0))
        if n <= 0:
            alt = F.closest_in_stock(variants, vname)
            if alt:
                return [
                    f"{vname} is sold out, sorry! {alt} is still available, want that one?",
                    f"{vname} is sold out, but {alt} is available!",
                    f"{vname} sold out; {alt} available.",
                ]
            return [f"{vname} is sold out, sorry!"]
        phrase = F.units_phrase(n)
        if n < F.LOW_STOCK:
            return [f"Hurry, only {phrase} in {vname}! 🔥", f"Only {phrase} in {vname}!", f"{vname}: {phrase}"]
        return [f"Yes, {vname} is {phrase}! 🛍️", f"{vname} is {phrase}!"]
    total = _total(res)
    if total is None:
        return ["Let me check the stock for you, one moment!", "Checking stock!"]
    phrase = F.units_phrase(total)
    n = _subject(name, "It")
    if total <= 0:
        return [f"{n} is sold out right now, sorry!", "Sold out, sorry!"]
    if total < F.LOW_STOCK:
        return [f"Hurry, only {phrase} of {n}! 🔥", f"Only {phrase} of {n}!", f"Only {phrase}!"]
    return [f"Yes, {n} is {phrase}! 🛍️", f"{n} is {phrase}!", f"Yes, {phrase}!"]


def _size(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    card = found.cards.get(pid)
    if not card:
        return ["Let me check the size guide for you, one moment!", "Checking the size guide!"]
    name = _subject(card.get("name") or _name(pid, ctx, found))
    guide = card.get("size_guide")
    height = slots.get("height_cm")
    if _incomplete(card, "size_guide"):
        return ["Let me check the full size guide for you, one moment!", "Checking the size guide!"]
    if isinstance(guide, list) and guide and height:
        size = F.size_for_height(guide, float(height))
        if size:
            return [
                f"At {height} cm I'd go for size {size} in {name}!",
                f"At {height} cm, go for size {size}!",
                f"I'd pick size {size}.",
            ]
    sizes = ", ".join(str(v) for v in card.get("variants") or [])
    if sizes:
        return [
            f"{name} comes in {sizes}; tell me your height and I'll suggest a size!",
            "Tell me your height and I'll suggest a size!",
        ]
    return ["Tell me your height and I'll suggest a size!"]


def _shipping(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    s = found.shipping
    if not s or not isinstance(s.get("days_min"), int) or not isinstance(s.get("fee"), (int, float)):
        return ["Let me check delivery to your area, one moment!", "Checking delivery!"]
    region = str(s.get("region") or slots.get("region") or "your area").title()
    days = F.days_range(int(s["days_min"]), int(s.get("days_max", s["days_min"])))
    if not s["fee"]:
        return [
            f"Good news: free shipping to {region}, arriving in {days}!",
            f"Free shipping to {region}, {days}!",
            f"free shipping, {days}",
        ]
    fee = F.money(s["fee"])
    out = []
    if isinstance(s.get("free_over"), (int, float)) and s["free_over"]:
        free = F.money(s["free_over"])
        out += [
            f"Delivery to {region} takes {days} with a {fee} fee, free over {free}!",
            f"To {region}: {days}, {fee} fee, free over {free}.",
        ]
    out += [f"To {region}: {days}, {fee} fee.", f"{days}, {fee} fee."]
    return out


def _returns(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    pol = found.returns.get(pid)
    if not pol or not isinstance(pol.get("days"), int):
        return ["Let me check the return policy for you, one moment!", "Checking the return policy!"]
    days = F.days_phrase(pol["days"])
    cond = pol.get("condition")
    name = _subject(_name(pid, ctx, found), "it")
    out = []
    if cond:
        out += [f"You can return {name} within {days} if it's {cond}.", f"Returns within {days}, {cond}."]
    out += [f"You can return {name} within {days}.", f"Returns within {days}."]
    return out


def _order(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    oid = slots.get("order_id")
    if not oid:
        return ["Could you share your order number? I'll check it right away!", "What's your order number?"]
    o = found.order
    if not o or not o.get("status"):
        return [
            f"I couldn't reach the order system just now, I'll check {oid} and get back to you!",
            f"I'll check {oid} and get back to you!",
        ]
    status = str(o["status"])
    oid = str(o.get("order_id") or oid)
    eta = F.day(o["eta"]) if o.get("eta") else None
    phrase = F.status_phrase(status)
    if not eta:
        return [f"Order {oid} is {phrase}.", f"{oid}: {phrase}"]
    if status == "delivered":
        return [
            f"Order {oid} was delivered on {eta}! Let me know if you can't find it.",
            f"Order {oid} was delivered on {eta}.",
            f"{oid}: delivered {eta}",
        ]
    carrier = o.get("carrier")
    out = []
    if carrier:
        out.append(f"Order {oid} is {phrase}, expected {eta} with {carrier}.")
    out += [f"Order {oid} is {phrase}, expected {eta}.", f"{oid}: {phrase}, {eta}"]
    return out


def _comparison(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    a, b = slots.get("product_id") or "", slots.get("other_id") or ""
    pa, pb = _live_price(a, found), _live_price(b, found)
    na, nb = _name(a, ctx, found), _name(b, ctx, found)
    if pa is None and pb is None:
        return ["Let me pull up both cards for you, one moment!", "Checking both!"]
    if pa is None or pb is None:
        known_name, known_price, other = (nb, pb, na) if pa is None else (na, pa, nb)
        price = F.money(float(known_price or 0))
        return [
            f"{_subject(known_name)} is {price}; let me check {other or 'the other one'} for you!",
            f"{price} for {_subject(known_name, 'one')}; checking the other!",
            f"{price}; checking the other!",
        ]
    ma, mb = F.money(pa), F.money(pb)
    out = []
    if na and nb:
        da = (found.cards.get(a) or {}).get("description")
        db = (found.cards.get(b) or {}).get("description")
        if da and db:
            out.append(f"{na} is {ma}, {da}; {nb} is {mb}, {db}.")
        out += [f"{na} is {ma} and {nb} is {mb}, it depends on what you need!", f"{na} {ma} vs {nb} {mb}."]
    out.append(f"{ma} vs {mb}.")
    return out


def _compliance(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    card = found.cards.get(pid)
    name = _subject(_name(pid, ctx, found), "It")
    if not card:
        return [
            "Please ask a doctor or pharmacist about health questions; I'll check the product card for you.",
            "Please ask your doctor about that.",
        ]
    comp = card.get("compliance")
    if isinstance(comp, dict) and comp.get("disclaimer"):
        kind, disc = comp.get("kind") or "product", comp["disclaimer"]
        return [
            f"{name} is a {kind}, {disc}, so please ask a doctor or pharmacist about your condition.",
            f"{name} is a {kind}, {disc}; please ask your doctor.",
            f"It's {disc}; please ask your doctor.",
            f"{disc[0].upper()}{disc[1:]}; ask your doctor.",
        ]
    return [
        f"I can only share what's on the card for {name}; please ask a doctor about health questions.",
        "Please ask a doctor about health questions.",
    ]


def _handoff(slots: dict[str, Any], ctx: dict[str, Any], found: Findings, *, sorry: bool) -> list[str]:
    t = (found.ticket or {}).get("ticket")
    if not t:
        return [
            "I'm so sorry! I'll get a team member to reach you as soon as I can.",
            "Sorry! A team member will reach you soon.",
        ]
    if sorry:
        return [
            f"I'm so sorry about that! A team member will follow up with you shortly, ticket {t}.",
            f"So sorry! A team member will follow up, ticket {t}.",
            f"Sorry! Ticket {t}, a team member will follow up.",
            f"Sorry! Ticket {t}.",
        ]
    return [
        f"Sure! A team member will follow up with you shortly, ticket {t}.",
        f"Sure, a team member will follow up, ticket {t}.",
        f"Ticket {t}, a person will follow up.",
    ]


def _off_topic(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    n = ctx.get("on_screen_name")
    if not n:
        return ["Let's keep it to the show! Ask me about anything on screen. 😊", "Let's keep it to the show!"]
    return [
        f"Ha, let's keep it to the show! {n} is on screen, want to know more about it? 😊",
        f"Let's keep it to the show: ask me about {n}!",
        f"Let's talk {n}!",
        n,
    ]


def _flash(slots: dict[str, Any], ctx: dict[str, Any], found: Findings) -> list[str]:
    pid = slots.get("product_id") or ""
    promos = found.promos.get(pid)
    name = _subject(_name(pid, ctx, found), "this one")
    stock = found.stock.get(pid)
    total = _total(stock) if stock and isinstance(stock.get("variants"), list) else None
    left = F.left_phrase(total) if total is not None else None
    if promos is None or "flash_sale" not in promos:
        if left:
            return [f"Let me check the flash price for you; {left} right now!", f"Checking the flash price, {left}!"]
        return ["Let me check the flash sale for you, one moment!", "Checking the flash sale!"]
    flash = promos.get("flash_sale")
    if not isinstance(flash, dict) or not isinstance(flash.get("price"), (int, float)):
        live = promos.get("live_price")
        if isinstance(live, (int, float)):
            return [
                f"No flash sale on {name} right now, but it's {F.money(live)} live!",
                f"No flash sale now; {F.money(live)} live.",
            ]
        return [f"No flash sale on {name} right now!", "No flash sale right now!"]
    price = F.money(flash["price"])
    as_of = promos.get("as_of")
    until = F.when(flash["ends_at"], as_of) if flash.get("ends_at") and as_of else None
    limit = F.limit_phrase(flash["per_viewer_limit"]) if flash.get("per_viewer_limit") else None
    parts = [f"Flash price {price}"] + ([f"until {until}"] if until else [])
    core = " ".join(parts)
    tail = [x for x in (left, limit) if x]
    long = core + (", " + ", ".join(tail) if tail else "") + (" per viewer" if limit else "")
    short = f"{price}" + (f" till {until}" if until else "") + (", " + ", ".join(tail) if tail else "")
    if left is None and stock is not None:
        # The stock result came back cut short: say so rather than leave the count out silently.
        return [f"{long}! Checking stock for you. ⚡", f"{long}! Checking stock.", f"{short}; checking stock", short]
    return [f"{long}! ⚡", f"{long}!", short]


_COMPOSERS = {
    "greeting": _greeting,
    "product_info": _product_info,
    "price": _price,
    "promotion": _promotion,
    "stock": _stock,
    "size_advice": _size,
    "shipping": _shipping,
    "returns": _returns,
    "order_status": _order,
    "comparison": _comparison,
    "compliance_sensitive": _compliance,
    "complaint": lambda s, c, f: _handoff(s, c, f, sorry=True),
    "human_request": lambda s, c, f: _handoff(s, c, f, sorry=False),
    "off_topic": _off_topic,
    "flash_sale": _flash,
}
