"""The live room's catalog: products, deals, shipping and return rules, orders.

The shipped catalog (``harnessctl/sim/data/catalog.json``) is generated once, deterministically,
by this module and committed; regenerate it with ``python -m harnessctl.sim.catalog --write``.
A team can bring its own products instead ("production-informed" simulation) with
:func:`import_catalog` (JSON or CSV); the shop policies it does not give (shipping, returns, the
clock) come from the shipped catalog.

>>> cat = load_catalog()
>>> cat.product("P001")["name"]
'Glow Serum'
>>> len(cat.products) >= 40
True
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harnessctl.errors import HarnessctlError

CATALOG_SCHEMA_VERSION = 1
CATEGORIES = ("beauty", "food", "apparel", "electronics", "home")
DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED_CATALOG = DATA_DIR / "catalog.json"
#: The simulated clock: every deal's end time is relative to it, so cases never go stale.
SIM_NOW = "2025-06-14T19:00"
GENERATOR_SEED = 7


class CatalogError(HarnessctlError, ValueError):
    """A catalog file that cannot be used; the message names the file, row and field."""


@dataclass
class Catalog:
    """Plain catalog data with lookups by id. Treat it as read-only: it is shared."""

    products: list[dict[str, Any]]
    promotions: list[dict[str, Any]] = field(default_factory=list)
    flash_sales: list[dict[str, Any]] = field(default_factory=list)
    shipping: dict[str, dict[str, Any]] = field(default_factory=dict)
    cities: dict[str, str] = field(default_factory=dict)
    returns: dict[str, dict[str, Any]] = field(default_factory=dict)
    orders: list[dict[str, Any]] = field(default_factory=list)
    now: str = SIM_NOW
    currency: str = "USD"
    source: str = "shipped"

    def __post_init__(self) -> None:
        self._products = {p["id"]: p for p in self.products}
        self._orders = {o["id"]: o for o in self.orders}

    # -- lookups ----------------------------------------------------------------------------
    def product(self, product_id: str) -> dict[str, Any]:
        """The product with ``product_id`` (case-insensitive); ``KeyError`` naming it otherwise."""
        p = self._products.get(str(product_id).strip().upper())
        if p is None:
            raise KeyError(f"no product {product_id!r} in the catalog (ids look like P001)")
        return p

    def has_product(self, product_id: str) -> bool:
        return str(product_id).strip().upper() in self._products

    def order(self, order_id: str) -> dict[str, Any]:
        o = self._orders.get(str(order_id).strip().upper())
        if o is None:
            raise KeyError(f"no order {order_id!r} (order numbers look like LM123456)")
        return o

    def region(self, name: str) -> str:
        """The shipping region for a region or city name (case-insensitive)."""
        n = str(name).strip().lower()
        if n in self.shipping:
            return n
        if n in self.cities:
            return self.cities[n]
        known = ", ".join(sorted(self.shipping))
        raise KeyError(f"unknown region {name!r}; regions are {known}")

    def promotions_for(self, product_id: str) -> list[dict[str, Any]]:
        """Coupons that apply to a product: its own, its category's, and shop-wide ones."""
        p = self.product(product_id)
        out = []
        for c in self.promotions:
            ids = c.get("product_ids")
            cat = c.get("category")
            if (ids and p["id"] in ids) or (cat and cat == p["category"]) or (not ids and not cat):
                out.append(c)
        return out

    def flash_sale_for(self, product_id: str) -> dict[str, Any] | None:
        pid = self.product(product_id)["id"]
        for f in self.flash_sales:
            if f["product_id"] == pid:
                return f
        return None

    def return_policy(self, product_id: str) -> dict[str, Any]:
        p = self.product(product_id)
        policy = self.returns.get(p["category"])
        if policy is None:
            raise KeyError(f"no return policy for category {p['category']!r}")
        return policy

    def find(self, text: str) -> list[dict[str, Any]]:
        """Products whose name appears in ``text`` (longest names first)."""
        low = text.lower()
        hits = [p for p in self.products if p["name"].lower() in low]
        return sorted(hits, key=lambda p: -len(p["name"]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": CATALOG_SCHEMA_VERSION,
            "now": self.now,
            "currency": self.currency,
            "products": self.products,
            "promotions": self.promotions,
            "flash_sales": self.flash_sales,
            "shipping": self.shipping,
            "cities": self.cities,
            "returns": self.returns,
            "orders": self.orders,
        }


@lru_cache(maxsize=1)
def _shipped() -> Catalog:
    return catalog_from_dict(json.loads(SHIPPED_CATALOG.read_text(encoding="utf-8")), source=str(SHIPPED_CATALOG))


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The shipped catalog (cached, shared: do not mutate it), or the catalog file at ``path``.

    >>> load_catalog().now
    '2025-06-14T19:00'
    """
    if path is None:
        return _shipped()
    return import_catalog(path)


def catalog_from_dict(d: dict[str, Any], *, source: str = "<dict>", base: Catalog | None = None) -> Catalog:
    """Build a :class:`Catalog` from its JSON form; sections missing from ``d`` come from ``base``."""
    if not isinstance(d, dict) or not isinstance(d.get("products"), list) or not d["products"]:
        raise CatalogError(f"{source}: expected an object with a non-empty 'products' list")
    products = [_check_product(p, f"{source}: products[{i}]") for i, p in enumerate(d["products"])]
    _check_unique(products, source)

    def section(name: str, default: Any) -> Any:
        if name in d:
            return d[name]
        return getattr(base, name) if base is not None else default

    return Catalog(
        products=products,
        promotions=list(section("promotions", [])),
        flash_sales=list(section("flash_sales", [])),
        shipping=dict(section("shipping", {})),
        cities=dict(section("cities", {})),
        returns=dict(section("returns", {})),
        orders=list(section("orders", [])),
        now=str(section("now", SIM_NOW)),
        currency=str(section("currency", "USD")),
        source=source,
    )


def import_catalog(path: str | Path) -> Catalog:
    """A team's own catalog from JSON (the shipped format, or just ``{"products": [...]}`` /
    a bare list) or CSV (one product per row). Shop policies it does not give — shipping,
    returns, the clock — come from the shipped catalog.

    CSV columns: ``id, name, category, list_price, live_price`` (required), ``variants``
    (``S:3;M:0;L:12`` — name:stock pairs), ``variant_kind`` (size|colour|flavour),
    ``attributes`` (``volume=30 ml;skin=all``), ``disclaimer`` (e.g. ``not a medicine``),
    ``brand``, ``description``.

    >>> cat = import_catalog("my_products.csv")            # doctest: +SKIP
    """
    path = Path(path)
    if not path.is_file():
        raise CatalogError(f"{path}: no such file")
    base = _shipped()
    if path.suffix.lower() == ".csv":
        return catalog_from_dict({"products": _products_from_csv(path)}, source=str(path), base=base)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CatalogError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if isinstance(data, list):
        data = {"products": data}
    return catalog_from_dict(data, source=str(path), base=base)


def _products_from_csv(path: Path) -> list[dict[str, Any]]:
    products = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = {"id", "name", "category", "list_price", "live_price"} - set(reader.fieldnames or [])
        if missing:
            raise CatalogError(f"{path}:1: missing column(s) {', '.join(sorted(missing))}")
        for line, row in enumerate(reader, start=2):
            where = f"{path}:{line}"
            p: dict[str, Any] = {
                "id": (row.get("id") or "").strip().upper(),
                "name": (row.get("name") or "").strip(),
                "category": (row.get("category") or "").strip().lower(),
                "brand": (row.get("brand") or "").strip(),
                "description": (row.get("description") or "").strip(),
            }
            for col in ("list_price", "live_price"):
                try:
                    p[col] = round(float(row[col]), 2)
                except (TypeError, ValueError):
                    raise CatalogError(f"{where}: field {col!r} must be a number, got {row.get(col)!r}") from None
            kind = (row.get("variant_kind") or "size").strip() or "size"
            p["variants"] = _parse_pairs(row.get("variants") or "", where, kind)
            p["attributes"] = {
                k.strip(): v.strip()
                for k, _, v in (item.partition("=") for item in (row.get("attributes") or "").split(";"))
                if k.strip()
            }
            disclaimer = (row.get("disclaimer") or "").strip()
            p["compliance"] = (
                {
                    "kind": p["category"],
                    "disclaimer": disclaimer,
                    "forbidden_claims": ["cures", "treats", "heals", "prevents"],
                }
                if disclaimer
                else None
            )
            p["size_guide"] = None
            products.append(p)
    return products


def _parse_pairs(text: str, where: str, kind: str) -> list[dict[str, Any]]:
    if not text.strip():
        return [{"name": "standard", "kind": kind, "stock": 0}]
    out = []
    for item in text.split(";"):
        name, sep, stock = item.partition(":")
        if not sep or not stock.strip().isdigit():
            raise CatalogError(f"{where}: field 'variants' item {item!r} must look like NAME:STOCK, e.g. M:12")
        out.append({"name": name.strip(), "kind": kind, "stock": int(stock)})
    return out


def _check_product(p: Any, where: str) -> dict[str, Any]:
    if not isinstance(p, dict):
        raise CatalogError(f"{where}: expected an object")
    for key in ("id", "name", "category"):
        if not isinstance(p.get(key), str) or not p[key].strip():
            raise CatalogError(f"{where}: field {key!r} is required (a non-empty string)")
    for key in ("list_price", "live_price"):
        if not isinstance(p.get(key), (int, float)) or isinstance(p.get(key), bool):
            raise CatalogError(f"{where} ({p['id']}): field {key!r} must be a number")
    variants = p.get("variants") or [{"name": "standard", "kind": "size", "stock": 0}]
    for j, v in enumerate(variants):
        if not isinstance(v, dict) or "name" not in v or not isinstance(v.get("stock"), int):
            raise CatalogError(f"{where} ({p['id']}): variants[{j}] needs a name and an integer stock")
    out = dict(p)
    out["id"] = p["id"].strip().upper()
    out["variants"] = variants
    out.setdefault("attributes", {})
    out.setdefault("compliance", None)
    out.setdefault("size_guide", None)
    out.setdefault("brand", "")
    out.setdefault("description", "")
    return out


def _check_unique(products: list[dict[str, Any]], source: str) -> None:
    seen: set[str] = set()
    for p in products:
        if p["id"] in seen:
            raise CatalogError(f"{source}: product id {p['id']!r} appears twice; ids must be unique")
        seen.add(p["id"])


# -- the generator of the shipped catalog ------------------------------------------------------

# (name, brand, description, attributes, variant kind, variant names, price band)
_SEEDS: dict[str, list[tuple[str, str, str, dict[str, str], str, list[str], tuple[float, float]]]] = {
    "beauty": [
        (
            "Glow Serum",
            "Lumi Lab",
            "a light serum for a brighter look",
            {"volume": "30 ml", "key ingredient": "niacinamide", "skin type": "all skin types"},
            "size",
            ["30 ml"],
            (18, 40),
        ),
        (
            "Rose Lip Tint",
            "Petal",
            "a sheer lip tint that lasts all day",
            {"finish": "satin", "volume": "4 g"},
            "colour",
            ["rose", "coral", "berry"],
            (9, 20),
        ),
        (
            "Silk Foundation",
            "Lumi Lab",
            "a medium-cover foundation with a soft finish",
            {"coverage": "medium", "volume": "30 ml"},
            "colour",
            ["ivory", "beige", "honey", "mocha"],
            (20, 45),
        ),
        (
            "Cloud Cream",
            "Dewy",
            "a whipped moisturiser for dry skin",
            {"volume": "50 ml", "key ingredient": "ceramides"},
            "size",
            ["50 ml", "100 ml"],
            (15, 38),
        ),
        (
            "Clear Skin Toner",
            "Dewy",
            "a gentle toner with green tea",
            {"volume": "200 ml", "key ingredient": "green tea"},
            "size",
            ["200 ml"],
            (10, 24),
        ),
        (
            "Velvet Mascara",
            "Petal",
            "a lengthening mascara that does not smudge",
            {"wear": "12 hours"},
            "colour",
            ["black", "brown"],
            (8, 19),
        ),
        (
            "Sun Shield SPF50",
            "Lumi Lab",
            "a daily sunscreen with a matte finish",
            {"protection": "SPF50 PA++++", "volume": "50 ml"},
            "size",
            ["50 ml"],
            (12, 28),
        ),
        (
            "Calm Eye Gel",
            "Dewy",
            "a cooling gel for tired eyes",
            {"volume": "15 ml", "key ingredient": "caffeine"},
            "size",
            ["15 ml"],
            (12, 30),
        ),
        (
            "Bamboo Hair Oil",
            "Root",
            "a light oil for frizzy hair",
            {"volume": "100 ml", "scent": "bamboo"},
            "size",
            ["100 ml"],
            (9, 22),
        ),
        (
            "Peach Blush",
            "Petal",
            "a powder blush with a soft glow",
            {"finish": "shimmer", "weight": "6 g"},
            "colour",
            ["peach", "rose"],
            (8, 18),
        ),
    ],
    "food": [
        (
            "Matcha Latte Mix",
            "Leaf & Co",
            "ceremonial-grade matcha with oat milk powder",
            {"weight": "250 g", "servings": "20"},
            "flavour",
            ["original", "vanilla"],
            (12, 26),
        ),
        (
            "Collagen Drink",
            "Vita Spring",
            "a peach-flavoured collagen drink",
            {"pack": "10 bottles", "collagen": "5000 mg per bottle"},
            "size",
            ["10 pack", "30 pack"],
            (25, 60),
        ),
        (
            "Honey Granola",
            "Morning Jar",
            "oat granola baked with wildflower honey",
            {"weight": "400 g"},
            "size",
            ["400 g"],
            (6, 14),
        ),
        (
            "Vitamin C Gummies",
            "Vita Spring",
            "orange gummies with vitamin C",
            {"count": "60 gummies", "vitamin C": "250 mg each"},
            "size",
            ["60 count"],
            (9, 22),
        ),
        (
            "Dark Choco Bites",
            "Cocoa Lane",
            "70% dark chocolate squares",
            {"cocoa": "70%"},
            "size",
            ["150 g", "300 g"],
            (5, 15),
        ),
        (
            "Cold Brew Pack",
            "Bean Bar",
            "cold brew coffee bags for the fridge",
            {"bags": "12", "roast": "medium"},
            "size",
            ["12 bags"],
            (10, 20),
        ),
        (
            "Protein Bar Box",
            "Fit Fuel",
            "high-protein snack bars",
            {"protein": "20 g per bar", "bars": "12"},
            "flavour",
            ["peanut", "cocoa", "berry"],
            (18, 32),
        ),
        (
            "Sleep Tea",
            "Leaf & Co",
            "a caffeine-free herbal blend with chamomile",
            {"bags": "20", "herbs": "chamomile, lavender"},
            "size",
            ["20 bags"],
            (7, 16),
        ),
        (
            "Chili Crisp Oil",
            "Wok Star",
            "crunchy chili oil with garlic",
            {"volume": "200 ml", "heat": "medium"},
            "size",
            ["200 ml"],
            (7, 15),
        ),
        (
            "Probiotic Sachets",
            "Vita Spring",
            "a daily probiotic powder",
            {"sachets": "30", "cultures": "10 billion"},
            "size",
            ["30 sachets"],
            (20, 45),
        ),
    ],
    "apparel": [
        (
            "Linen Shirt",
            "Loom",
            "a breathable linen shirt, relaxed fit",
            {"material": "100% linen", "fit": "relaxed"},
            "size",
            ["S", "M", "L", "XL"],
            (29, 59),
        ),
        (
            "Denim Jacket",
            "Loom",
            "a classic washed denim jacket",
            {"material": "cotton denim", "fit": "regular"},
            "size",
            ["S", "M", "L", "XL"],
            (45, 89),
        ),
        (
            "Knit Cardigan",
            "Wool Lane",
            "a soft knit cardigan with pockets",
            {"material": "merino blend", "fit": "regular"},
            "size",
            ["XS", "S", "M", "L"],
            (35, 70),
        ),
        (
            "Yoga Leggings",
            "Flex",
            "high-waist leggings with a phone pocket",
            {"material": "nylon-spandex", "fit": "slim"},
            "size",
            ["XS", "S", "M", "L", "XL"],
            (22, 48),
        ),
        (
            "Silk Pajama Set",
            "Noon",
            "a two-piece silk pajama set",
            {"material": "mulberry silk", "fit": "relaxed"},
            "size",
            ["S", "M", "L"],
            (60, 120),
        ),
        (
            "Rain Parka",
            "Trail",
            "a hooded waterproof parka",
            {"material": "recycled polyester", "waterproof": "10000 mm"},
            "size",
            ["S", "M", "L", "XL"],
            (55, 110),
        ),
        (
            "Cotton Tee",
            "Loom",
            "an everyday crew-neck tee",
            {"material": "organic cotton", "fit": "regular"},
            "size",
            ["XS", "S", "M", "L", "XL"],
            (12, 25),
        ),
        (
            "Wide Leg Pants",
            "Noon",
            "flowy wide-leg trousers",
            {"material": "viscose", "fit": "high waist"},
            "size",
            ["S", "M", "L"],
            (30, 60),
        ),
        (
            "Running Shorts",
            "Flex",
            "light shorts with a liner",
            {"material": "polyester", "inseam": "5 in"},
            "size",
            ["S", "M", "L", "XL"],
            (18, 35),
        ),
        (
            "Puffer Vest",
            "Trail",
            "a packable down vest",
            {"material": "nylon shell", "fill": "down"},
            "size",
            ["S", "M", "L", "XL"],
            (40, 85),
        ),
    ],
    "electronics": [
        (
            "Mini Projector",
            "Beam",
            "a pocket projector for movie nights",
            {"brightness": "200 lumens", "battery": "2 hours"},
            "colour",
            ["white", "grey"],
            (89, 199),
        ),
        (
            "Air Buds Pro",
            "Sonic",
            "wireless earbuds with noise cancelling",
            {"battery": "8 hours", "charging": "USB-C"},
            "colour",
            ["black", "white"],
            (49, 129),
        ),
        (
            "Power Bank 20K",
            "Volt",
            "a 20000 mAh power bank",
            {"capacity": "20000 mAh", "ports": "2 USB-C"},
            "colour",
            ["black", "blue"],
            (25, 49),
        ),
        (
            "Smart Watch Lite",
            "Pulse",
            "a fitness watch with sleep tracking",
            {"battery": "7 days", "water": "5 ATM"},
            "colour",
            ["black", "pink"],
            (59, 129),
        ),
        (
            "Desk Lamp LED",
            "Beam",
            "a dimmable desk lamp with a USB port",
            {"brightness": "5 levels", "power": "10 W"},
            "colour",
            ["white", "black"],
            (25, 55),
        ),
        (
            "Speaker Go",
            "Sonic",
            "a splash-proof bluetooth speaker",
            {"battery": "12 hours", "water": "IPX7"},
            "colour",
            ["black", "teal", "sand"],
            (29, 69),
        ),
        (
            "Ring Light Kit",
            "Beam",
            "a ring light with a phone holder",
            {"diameter": "10 in", "stand": "160 cm"},
            "size",
            ["10 in"],
            (19, 45),
        ),
        (
            "Phone Stand Duo",
            "Volt",
            "a foldable aluminium phone stand",
            {"material": "aluminium"},
            "colour",
            ["silver", "black"],
            (9, 22),
        ),
        (
            "Fast Charger 65W",
            "Volt",
            "a compact 65 W charger",
            {"power": "65 W", "ports": "2 USB-C, 1 USB-A"},
            "colour",
            ["white"],
            (25, 49),
        ),
        (
            "Action Cam 4K",
            "Pulse",
            "a waterproof action camera",
            {"video": "4K 60fps", "water": "10 m"},
            "colour",
            ["black"],
            (79, 169),
        ),
    ],
    "home": [
        (
            "Bamboo Towel Set",
            "Nest",
            "soft bamboo towels, set of 3",
            {"material": "bamboo viscose", "pieces": "3"},
            "colour",
            ["white", "sage", "sand"],
            (25, 55),
        ),
        (
            "Aroma Diffuser",
            "Nest",
            "an ultrasonic diffuser with a night light",
            {"tank": "300 ml", "timer": "4 hours"},
            "colour",
            ["wood", "white"],
            (22, 49),
        ),
        (
            "Ceramic Mug Duo",
            "Kiln",
            "two stoneware mugs",
            {"volume": "350 ml each", "dishwasher": "safe"},
            "colour",
            ["cream", "blue"],
            (14, 28),
        ),
        (
            "Linen Bed Sheet",
            "Nest",
            "a stonewashed linen sheet",
            {"material": "French linen"},
            "size",
            ["single", "double", "queen"],
            (45, 99),
        ),
        (
            "Storage Basket",
            "Weave",
            "a woven basket with handles",
            {"material": "seagrass", "size": "35 cm"},
            "size",
            ["small", "large"],
            (12, 30),
        ),
        (
            "Cast Iron Pan",
            "Kiln",
            "a pre-seasoned cast iron skillet",
            {"material": "cast iron", "hob": "all hobs"},
            "size",
            ["24 cm", "28 cm"],
            (25, 55),
        ),
        (
            "Air Purifier",
            "Breeze",
            "a quiet purifier with a HEPA filter",
            {"room": "up to 30 m2", "filter": "HEPA"},
            "colour",
            ["white"],
            (79, 159),
        ),
        (
            "Memory Pillow",
            "Nest",
            "a contour memory-foam pillow",
            {"material": "memory foam", "cover": "washable"},
            "size",
            ["standard"],
            (25, 49),
        ),
        (
            "Glass Food Box",
            "Kiln",
            "oven-safe glass boxes with lids",
            {"pieces": "5", "lids": "snap lock"},
            "size",
            ["5 piece"],
            (18, 36),
        ),
        (
            "Wall Clock",
            "Weave",
            "a silent wooden wall clock",
            {"diameter": "30 cm", "movement": "silent"},
            "colour",
            ["oak", "walnut"],
            (19, 39),
        ),
    ],
}

_COSMETIC = {
    "kind": "cosmetic",
    "disclaimer": "not a medicine",
    "forbidden_claims": ["cures", "treats", "heals", "medicine for"],
}
_SUPPLEMENT = {
    "kind": "food supplement",
    "disclaimer": "not intended to treat",
    "forbidden_claims": ["cures", "treats", "prevents", "heals"],
}
_DEVICE = {
    "kind": "appliance",
    "disclaimer": "not a medical device",
    "forbidden_claims": ["cures", "treats", "prevents illness"],
}
_SUPPLEMENTS = {"Collagen Drink", "Vitamin C Gummies", "Sleep Tea", "Probiotic Sachets"}
_DEVICES = {"Air Purifier", "Aroma Diffuser"}

_SIZE_RANGES = {"XS": [145, 155], "S": [155, 163], "M": [163, 171], "L": [171, 179], "XL": [179, 190]}


def build_catalog(seed: int = GENERATOR_SEED) -> dict[str, Any]:
    """Generate the shipped catalog deterministically (JSON form)."""
    rng = random.Random(seed)
    products: list[dict[str, Any]] = []
    n = 0
    for category in CATEGORIES:
        for name, brand, desc, attrs, kind, variants, (lo, hi) in _SEEDS[category]:
            n += 1
            list_price = _price(rng.uniform(lo, hi))
            live_price = _price(list_price * rng.uniform(0.68, 0.9))
            compliance = None
            if category == "beauty":
                compliance = _COSMETIC
            elif name in _SUPPLEMENTS:
                compliance = _SUPPLEMENT
            elif name in _DEVICES:
                compliance = _DEVICE
            products.append(
                {
                    "id": f"P{n:03d}",
                    "name": name,
                    "category": category,
                    "brand": brand,
                    "description": desc,
                    "attributes": dict(attrs),
                    "list_price": list_price,
                    "live_price": live_price,
                    "variants": [{"name": v, "kind": kind, "stock": _stock(rng)} for v in variants],
                    "compliance": dict(compliance) if compliance else None,
                    "size_guide": (
                        [{"size": v, "height_cm": _SIZE_RANGES[v]} for v in variants] if category == "apparel" else None
                    ),
                }
            )
    # Every product keeps at least one unit somewhere, and the catalog has sold-out variants
    # and low-stock ones for the stock cases to find.
    for p in products:
        if all(v["stock"] == 0 for v in p["variants"]):
            p["variants"][-1]["stock"] = rng.randint(3, 15)
    promotions = _promotions(rng, products)
    flash_sales = _flash_sales(rng, products)
    return {
        "schema_version": CATALOG_SCHEMA_VERSION,
        "now": SIM_NOW,
        "currency": "USD",
        "products": products,
        "promotions": promotions,
        "flash_sales": flash_sales,
        "shipping": {
            "north": {"days_min": 2, "days_max": 4, "fee": 4.99, "free_over": 49.0},
            "south": {"days_min": 3, "days_max": 5, "fee": 5.99, "free_over": 59.0},
            "east": {"days_min": 1, "days_max": 3, "fee": 3.99, "free_over": 39.0},
            "west": {"days_min": 3, "days_max": 6, "fee": 6.99, "free_over": 69.0},
            "central": {"days_min": 1, "days_max": 2, "fee": 0.0, "free_over": 0.0},
            "islands": {"days_min": 5, "days_max": 9, "fee": 12.99, "free_over": 99.0},
        },
        "cities": {
            "pine falls": "north",
            "harbor city": "south",
            "riverton": "east",
            "sunvale": "west",
            "midtown": "central",
            "coral bay": "islands",
        },
        "returns": {
            "beauty": {"days": 14, "condition": "unopened"},
            "food": {"days": 7, "condition": "sealed"},
            "apparel": {"days": 30, "condition": "unworn with tags"},
            "electronics": {"days": 15, "condition": "in the original box"},
            "home": {"days": 30, "condition": "unused"},
        },
        "orders": _orders(rng, products),
    }


def _price(x: float) -> float:
    # Live-room prices end in .90 or .99, like the overlay shows them.
    whole = max(1, int(x))
    return round(whole + (0.9 if whole % 2 else 0.99), 2)


def _stock(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.15:
        return 0
    if r < 0.55:
        return rng.randint(1, 19)
    return rng.randint(20, 80)


def _promotions(rng: random.Random, products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    day = SIM_NOW[:10]
    promos: list[dict[str, Any]] = [
        {
            "code": "WELCOME5",
            "product_ids": None,
            "category": None,
            "amount_off": 5.0,
            "min_spend": 30.0,
            "per_viewer_limit": 1,
            "ends_at": "2025-06-21T23:59",
        },
        {
            "code": "BEAUTY15",
            "product_ids": None,
            "category": "beauty",
            "percent_off": 15,
            "min_spend": 0.0,
            "per_viewer_limit": 1,
            "ends_at": f"{day}T21:00",
        },
        {
            "code": "SNACK10",
            "product_ids": None,
            "category": "food",
            "percent_off": 10,
            "min_spend": 0.0,
            "per_viewer_limit": 2,
            "ends_at": "2025-06-16T23:59",
        },
        {
            "code": "STYLE20",
            "product_ids": None,
            "category": "apparel",
            "percent_off": 20,
            "min_spend": 60.0,
            "per_viewer_limit": 1,
            "ends_at": f"{day}T22:00",
        },
        {
            "code": "TECH30",
            "product_ids": None,
            "category": "electronics",
            "amount_off": 30.0,
            "min_spend": 150.0,
            "per_viewer_limit": 1,
            "ends_at": "2025-06-18T23:59",
        },
        {
            "code": "HOME12",
            "product_ids": None,
            "category": "home",
            "percent_off": 12,
            "min_spend": 0.0,
            "per_viewer_limit": 1,
            "ends_at": "2025-06-13T23:59",
        },  # expired
    ]
    for p in rng.sample(products, 14):
        letters = "".join(ch for ch in p["name"].upper() if ch.isalpha())[:5]
        if rng.random() < 0.5:
            value = rng.choice([5, 8, 10, 15, 20, 25])
            promo: dict[str, Any] = {"percent_off": value}
        else:
            value = rng.choice([2, 3, 5, 8])
            promo = {"amount_off": float(value)}
        ends = rng.choice([f"{day}T20:30", f"{day}T21:00", f"{day}T23:00", "2025-06-15T23:59", "2025-06-17T23:59"])
        promos.append(
            {
                "code": f"{letters}{value}",
                "product_ids": [p["id"]],
                "category": None,
                **promo,
                "min_spend": 0.0,
                "per_viewer_limit": rng.choice([1, 2]),
                "ends_at": ends,
            }
        )
    return promos


def _flash_sales(rng: random.Random, products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    day = SIM_NOW[:10]
    sales = []
    for p in sorted(rng.sample(products, 10), key=lambda p: p["id"]):
        price = _price(p["live_price"] * rng.uniform(0.55, 0.8))
        if price >= p["live_price"]:
            price = round(p["live_price"] - 1.0, 2)
        sales.append(
            {
                "product_id": p["id"],
                "price": price,
                "starts_at": f"{day}T19:00",
                "ends_at": f"{day}T{rng.choice(['19:30', '20:00', '20:30', '21:00', '22:00'])}",
                "per_viewer_limit": rng.choice([1, 2, 3, None]),
            }
        )
    return sales


def _orders(rng: random.Random, products: list[dict[str, Any]]) -> list[dict[str, Any]]:
    statuses = ["processing", "shipped", "shipped", "out_for_delivery", "delivered", "delayed"]
    regions = ["north", "south", "east", "west", "central", "islands"]
    orders = []
    used: set[str] = set()
    while len(orders) < 40:
        oid = f"LM{rng.randint(100000, 999999)}"
        if oid in used:
            continue
        used.add(oid)
        p = rng.choice(products)
        placed = rng.randint(4, 13)
        status = rng.choice(statuses)
        # Orders on their way arrive after the simulated "now" (Jun 14); delivered ones before it.
        eta = max(placed + rng.randint(3, 7), 15) if status != "delivered" else min(placed + rng.randint(1, 4), 14)
        orders.append(
            {
                "id": oid,
                "product_id": p["id"],
                "variant": rng.choice(p["variants"])["name"],
                "status": status,
                "placed": f"2025-06-{placed:02d}",
                "eta": f"2025-06-{eta:02d}",
                "region": rng.choice(regions),
                "carrier": rng.choice(["SwiftPost", "Parcel Go", "Lumi Express"]),
            }
        )
    return orders


def main(argv: list[str] | None = None) -> int:
    """``python -m harnessctl.sim.catalog --write``: regenerate the shipped catalog file."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--write", action="store_true", help=f"write {SHIPPED_CATALOG.name} (else check it is current)")
    ap.add_argument("--seed", type=int, default=GENERATOR_SEED)
    args = ap.parse_args(argv)
    text = json.dumps(build_catalog(args.seed), indent=1, ensure_ascii=False) + "\n"
    if args.write:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        SHIPPED_CATALOG.write_text(text, encoding="utf-8")
        return 0
    current = SHIPPED_CATALOG.read_text(encoding="utf-8") if SHIPPED_CATALOG.exists() else ""
    return 0 if current == text else 1


if __name__ == "__main__":
    raise SystemExit(main())
