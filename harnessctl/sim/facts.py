"""How facts are written, and the small shop policies that decide which fact applies.

The case generator (what a correct reply must contain) and the oracle (what it writes from tool
results) both go through these functions, so an expected fact and the oracle's wording agree by
construction: ``money(19.9) == "$19.90"`` everywhere.

>>> money(19.9), units_phrase(3), units_phrase(0), clock("2025-06-14T21:00"), day("2025-06-17")
('$19.90', '3 left', 'sold out', '21:00', 'Jun 17')
"""

from __future__ import annotations

import zlib
from datetime import datetime
from typing import Any

#: Under this many units the exact count is given ("3 left"); at or above it, "in stock".
LOW_STOCK = 20
CURRENCY_SYMBOL = "$"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def money(value: float) -> str:
    """``19.9 -> "$19.90"``."""
    return f"{CURRENCY_SYMBOL}{float(value):.2f}"


def units_phrase(n: int) -> str:
    """The stock wording of the ``exact_count`` rule: sold out, "N left" under 20, else in stock."""
    if n <= 0:
        return "sold out"
    if n < LOW_STOCK:
        return f"{n} left"
    return "in stock"


def left_phrase(n: int) -> str:
    """The real count, whatever its size (flash sales never round scarcity): ``"23 left"``."""
    return "sold out" if n <= 0 else f"{n} left"


def clock(iso: str) -> str:
    """``"2025-06-14T21:00" -> "21:00"``."""
    return _parse(iso).strftime("%H:%M")


def day(iso: str) -> str:
    """``"2025-06-17" -> "Jun 17"``."""
    d = _parse(iso)
    return f"{_MONTHS[d.month - 1]} {d.day}"


def when(iso: str, now: str) -> str:
    """An end time as a viewer reads it: the clock when it is today, else the day."""
    return clock(iso) if ends_today(iso, now) else day(iso)


def days_phrase(n: int) -> str:
    return f"{n} days"


def days_range(lo: int, hi: int) -> str:
    """``(2, 4) -> "2-4 days"``."""
    return f"{lo} days" if lo == hi else f"{lo}-{hi} days"


def discount_phrase(coupon: dict[str, Any]) -> str:
    """``{"percent_off": 15} -> "15% off"``; ``{"amount_off": 5} -> "$5.00 off"``."""
    if coupon.get("percent_off") is not None:
        return f"{_num(coupon['percent_off'])}% off"
    return f"{money(coupon.get('amount_off', 0))} off"


def status_phrase(status: str) -> str:
    """``"out_for_delivery" -> "out for delivery"``."""
    return str(status).replace("_", " ")


def size_phrase(size: str) -> str:
    return f"size {size}"


def limit_phrase(n: int) -> str:
    return f"limit {n}"


def ends_today(iso: str, now: str) -> bool:
    return _parse(iso).date() == _parse(now).date()


def is_active(iso_end: str | None, now: str) -> bool:
    return iso_end is None or _parse(iso_end) > _parse(now)


def coupon_saving(coupon: dict[str, Any], price: float) -> float:
    if coupon.get("percent_off") is not None:
        return round(price * float(coupon["percent_off"]) / 100.0, 2)
    return float(coupon.get("amount_off", 0.0))


def best_coupon(coupons: list[dict[str, Any]], price: float, now: str | None) -> dict[str, Any] | None:
    """The coupon the ``check_deals`` rule names: active at ``now`` (not checked when None),
    usable on one unit at ``price`` (min spend met), saving the most; ties go to the first
    code alphabetically."""
    usable = [
        c
        for c in coupons
        if (now is None or is_active(c.get("ends_at"), now)) and float(c.get("min_spend", 0) or 0) <= price
    ]
    if not usable:
        return None
    return min(usable, key=lambda c: (-coupon_saving(c, price), str(c.get("code"))))


def size_for_height(guide: list[dict[str, Any]], height_cm: float) -> str | None:
    """The size whose ``height_cm: [lo, hi)`` range holds ``height_cm`` (clamped to the ends)."""
    if not guide:
        return None
    for row in guide:
        lo, hi = row["height_cm"]
        if lo <= height_cm < hi:
            return str(row["size"])
    return str(guide[0]["size"] if height_cm < guide[0]["height_cm"][0] else guide[-1]["size"])


def closest_in_stock(variants: list[dict[str, Any]], name: str) -> str | None:
    """The in-stock variant nearest to ``name`` in list order (the next one up on a tie)."""
    names = [str(v["name"]).lower() for v in variants]
    if name.lower() not in names:
        return None
    i = names.index(name.lower())
    best: tuple[int, int] | None = None
    for j, v in enumerate(variants):
        if j == i or int(v.get("stock", 0)) <= 0:
            continue
        key = (abs(j - i), 0 if j > i else 1)
        if best is None or key < best:
            best = key
            found = str(v["name"])
    return found if best is not None else None


def ticket_id(handle: str) -> str:
    """The hand-off ticket the support desk opens for a viewer: stable per viewer handle
    (suites rename and perturb cases, never the viewer), e.g. ``"HT4821"``."""
    return f"HT{zlib.crc32(str(handle).encode('utf-8')) % 9000 + 1000}"


def _parse(iso: str) -> datetime:
    return datetime.fromisoformat(str(iso))


def _num(v: float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else str(f)
