"""Generated viewer cases: varied comments for every intent, with what a correct answer needs.

>>> [c.intent for c in generate_cases(3, seed=0, intents=["price", "stock"])]
['price', 'stock', 'price']
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harnessctl.sim import facts as F
from harnessctl.sim.case import Case, CaseContext
from harnessctl.sim.catalog import Catalog, load_catalog
from harnessctl.sim.expectations import expectation_for
from harnessctl.sim.phrasings import check_phrasings
from harnessctl.sim.task import FAULT_KINDS, INTENTS
from harnessctl.sim.templates import (
    CONDITIONS,
    EMOJI,
    HANDLES,
    POINTERS,
    template_id,
    templates_for,
)
from harnessctl.sim.wording import vary_template


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
    messages: str = "all",
    vary_wording: float = 0.0,
    phrasings: Mapping[str, Sequence[str]] | None = None,
) -> list[Case]:
    """``n`` cases, deterministic in ``seed``, intents balanced (round robin, shuffled).

    ``faults`` gives each case, with that probability, a fault plan on one of its needed tools
    (a dict ``{kind: probability}`` picks the kind): mostly one failed call then success, some
    failing on every call.

    ``messages`` picks the viewer-message templates: ``"train"`` (training data), ``"eval"`` (the
    suites: held out from training) or ``"all"`` (see :mod:`harnessctl.sim.templates`).

    ``vary_wording`` rewrites that share of the messages' templates with the intent-agnostic
    operators of :mod:`harnessctl.sim.wording` (tagged ``varied_wording``); the other cases are
    the same as without it, byte for byte.

    ``phrasings`` adds templates per message kind to the ones ``messages`` picks (checked by
    :func:`harnessctl.sim.phrasings.check_phrasings`; the cases drawn from them are tagged
    ``added_phrasing``). Training data only: it is refused with ``messages="eval"``.

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
    if not 0.0 <= vary_wording <= 1.0:
        raise ValueError(f"vary_wording must be within [0, 1], got {vary_wording}")
    if phrasings:
        if messages == "eval":
            raise ValueError("added phrasings are for training data; the suites' messages stay held out")
        issues = check_phrasings(phrasings)
        if issues:
            raise ValueError(str(issues[0]))
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
        # Its own stream, so that cases left unvaried are the ones the same seed gave before.
        wording_rng = random.Random(f"wording|{seed}|{i}") if vary_wording else None
        vary = wording_rng if wording_rng is not None and wording_rng.random() < vary_wording else None
        case = _make_case(
            intent,
            case_rng,
            catalog,
            case_id=f"{intent}-{seed}-{i:04d}",
            seed=seed,
            suite=suite,
            messages=messages,
            vary=vary,
            phrasings=phrasings,
        )
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


def _make_case(
    intent: str,
    rng: random.Random,
    catalog: Catalog,
    *,
    case_id: str,
    seed: int,
    suite: str,
    messages: str = "all",
    vary: random.Random | None = None,
    phrasings: Mapping[str, Sequence[str]] | None = None,
) -> Case:
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
    context = CaseContext(
        product_id=product["id"],
        product_name=product["name"],
        viewer={"handle": handle, "region": region} if region else {"handle": handle},
    )
    slots: dict[str, Any] = {"product_id": product["id"]}
    key = intent
    fill: dict[str, Any] = {"this": rng.choice(POINTERS + (product["name"],)), "name": product["name"]}
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
        fill["condition"] = rng.choice(CONDITIONS)
    elif intent == "complaint":
        if rng.random() < 0.7:
            key = "complaint_damaged"
            slots["urgency"] = "high"
            order = rng.choice(catalog.orders) if catalog.orders else None
            fill["order"] = order["id"] if order else ""
        else:
            slots["urgency"] = "normal"

    builtin = templates_for(key, messages)
    added = list(phrasings.get(key, ())) if phrasings else []
    template = rng.choice(builtin + added) if added else rng.choice(builtin)
    if added and template not in builtin:
        tags.append("added_phrasing")
    source_id = template_id(key, template)  # a varied message still counts as its template's
    if vary is not None:
        template = vary_template(template, vary)
        tags.append("varied_wording")
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
    if "{this}" in template and fill["this"] in POINTERS[1:3]:
        tags.append("on_screen_ref")

    case = Case(
        id=case_id,
        intent=intent,
        query=query,
        context=context,
        suite=suite,
        seed=seed,
        tags=tags,
        slots=slots,
        template=source_id,
    )
    case.expect = expectation_for(intent, slots, catalog, context, query)
    return case


def _casual(text: str, rng: random.Random) -> str:
    """Live-chat spelling: lower case, "u" for "you", a trailing emoji, no question mark."""
    if rng.random() < 0.3:
        text = text.lower()
    if rng.random() < 0.3:
        text = re.sub(r"\byou\b", "u", text)
    if rng.random() < 0.15:
        text = text.rstrip("?")
    if rng.random() < 0.2 and not any(e in text for e in EMOJI):
        text = f"{text} {rng.choice(EMOJI)}"
    return text


def _history(rng: random.Random, handle: str, name: str) -> list[dict[str, str]]:
    return rng.choice(
        [
            [
                {"role": "user", "content": "hi Mia!"},
                {"role": "assistant", "content": f"Hi {handle}, welcome to the show!"},
            ],
            [
                {"role": "user", "content": f"is that the {name}?"},
                {"role": "assistant", "content": f"Yes, that's {name} on screen now!"},
            ],
            [
                {"role": "user", "content": "just joined, what's on?"},
                {"role": "assistant", "content": f"Welcome! We're showing {name} right now."},
            ],
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
