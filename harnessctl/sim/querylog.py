"""Cases from free-form comments: one typed by a person, or a file of real viewer comments.

>>> c = case_from_query("is M still in stock?", "P021")
>>> c.intent, c.slots["variant"]
('stock', 'M')
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from harnessctl.sim.case import Case, CaseContext
from harnessctl.sim.catalog import Catalog, load_catalog
from harnessctl.sim.expectations import expectation_for
from harnessctl.sim.intents import ORDER_RE, PROMO_WORDS, classify_intent
from harnessctl.sim.jsonl import read_jsonl

_DAMAGE_WORDS = ("broken", "damaged", "missing", "leaking", "never came", "never arrived", "cracked")


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
        viewer.setdefault("region", "central" if "central" in catalog.shipping else min(catalog.shipping))
    context = CaseContext(
        product_id=product["id"], product_name=product["name"], viewer=viewer, history=list(history or [])
    )
    intent = classify_intent(query)
    slots = _slots(query, intent, product, catalog, viewer)
    if intent == "comparison" and "other_id" not in slots:
        intent = "product_info"
    if intent == "comparison":
        context.lineup = {slots["other_id"]: catalog.product(slots["other_id"])["name"]}
    case = Case(id=case_id, intent=intent, query=query, context=context, suite=suite, slots=slots)
    case.expect = expectation_for(intent, slots, catalog, context, query)
    return case


def _slots(
    query: str, intent: str, product: dict[str, Any], catalog: Catalog, viewer: dict[str, Any]
) -> dict[str, Any]:
    low = query.lower()
    slots: dict[str, Any] = {"product_id": product["id"]}
    m = ORDER_RE.search(query)
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
    if intent == "price" and re.search(PROMO_WORDS, low):
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
        for i, obj in read_jsonl(path):
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{i}: expected a JSON object per line")  # noqa: TRY004 - bad input, exit 2
            rows.append((i, obj))
    cases = []
    for line, row in rows:
        text = next((str(row[k]).strip() for k in ("query", "comment", "text", "message") if row.get(k)), "")
        if not text:
            raise ValueError(f"{path}:{line}: no comment text (give a 'query', 'comment', 'text' or 'message' field)")
        pid = str(row.get("product_id") or row.get("on_screen") or product_id or "") or None
        if pid and not catalog.has_product(pid):
            raise ValueError(f"{path}:{line}: field 'product_id': no product {pid!r} in the catalog")
        viewer = {
            k: str(v)
            for k, v in (("handle", row.get("handle") or row.get("viewer")), ("region", row.get("region")))
            if v
        }
        if viewer.get("handle") and not viewer["handle"].startswith("@"):
            viewer["handle"] = "@" + viewer["handle"]
        try:
            case = case_from_query(text, pid, catalog, viewer=viewer, case_id=f"{path.stem}-{line}", suite=suite)
        except KeyError as e:
            raise ValueError(f"{path}:{line}: {e.args[0]}") from None
        case.tags.append("production")
        cases.append(case)
    return cases
