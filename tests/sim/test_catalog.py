"""The shipped catalog is rich enough for every intent, reproducible, and replaceable by a
team's own products."""

from __future__ import annotations

import json
import re

import pytest

from harnessctl.sim import CatalogError, generate_cases, import_catalog, load_catalog
from harnessctl.sim.catalog import CATEGORIES, build_catalog, main


def test_the_shipped_catalog_covers_what_viewers_ask_about(catalog):
    products = catalog.products
    assert len(products) >= 40
    assert {p["category"] for p in products} == set(CATEGORIES)
    assert all(re.fullmatch(r"P\d{3}", p["id"]) for p in products)
    stocks = [v["stock"] for p in products for v in p["variants"]]
    assert 0 in stocks and any(0 < s < 20 for s in stocks) and any(s >= 20 for s in stocks)
    assert all(p["live_price"] < p["list_price"] for p in products)
    assert any(len(p["variants"]) > 1 for p in products)
    assert all(p["size_guide"] for p in products if p["category"] == "apparel")
    kinds = {p["compliance"]["kind"] for p in products if p["compliance"]}
    assert {"cosmetic", "food supplement"} <= kinds
    assert {c["code"] for c in catalog.promotions} >= {"WELCOME5", "BEAUTY15"}
    assert any(c.get("min_spend") for c in catalog.promotions) and all("ends_at" in c for c in catalog.promotions)
    assert any(c["ends_at"] < catalog.now for c in catalog.promotions)  # an expired one
    assert catalog.flash_sales and all(catalog.has_product(f["product_id"]) for f in catalog.flash_sales)
    assert {"days_min", "days_max", "fee", "free_over"} <= set(catalog.shipping["north"])
    assert set(catalog.returns) == set(CATEGORIES)
    assert len(catalog.orders) >= 20 and all(re.fullmatch(r"LM\d{6}", o["id"]) for o in catalog.orders)


def test_the_committed_catalog_is_what_the_generator_writes():
    assert main([]) == 0  # regenerating would not change the file
    assert build_catalog() == build_catalog()


def test_lookups_by_id_name_and_city(catalog):
    assert catalog.product("p001")["name"] == "Glow Serum"
    assert catalog.region("Harbor City") == "south"
    assert catalog.find("is the Linen Shirt nice?")[0]["id"] == "P021"
    with pytest.raises(KeyError, match="P999"):
        catalog.product("P999")


def test_a_team_imports_its_own_products_from_csv(tmp_path):
    path = tmp_path / "shop.csv"
    path.write_text(
        "id,name,category,list_price,live_price,variants,variant_kind,attributes,disclaimer\n"
        "A1,Moon Balm,beauty,20,15.5,small:4;large:0,size,volume=15 ml;scent=mint,not a medicine\n"
        "A2,Trail Socks,apparel,12,9.9,S:30;M:2;L:0,size,material=wool,\n",
        encoding="utf-8",
    )
    cat = import_catalog(path)
    assert [p["id"] for p in cat.products] == ["A1", "A2"]
    balm = cat.product("A1")
    assert balm["variants"] == [
        {"name": "small", "kind": "size", "stock": 4},
        {"name": "large", "kind": "size", "stock": 0},
    ]
    assert (
        balm["attributes"] == {"volume": "15 ml", "scent": "mint"}
        and balm["compliance"]["disclaimer"] == "not a medicine"
    )
    assert cat.shipping == load_catalog().shipping  # shop policies come from the shipped catalog
    cases = generate_cases(20, seed=1, catalog=cat)
    assert {c.context.product_id for c in cases} <= {"A1", "A2"}
    assert "size_advice" not in {c.intent for c in cases}  # no size guide in this catalog


def test_a_team_imports_its_own_products_from_json(tmp_path):
    path = tmp_path / "shop.json"
    path.write_text(
        json.dumps([{"id": "x1", "name": "Desk Fan", "category": "home", "list_price": 30, "live_price": 25}])
    )
    cat = import_catalog(path)
    assert cat.product("X1")["variants"][0]["name"] == "standard"


@pytest.mark.parametrize(
    "content, fragment",
    [
        (
            "id,name,category,list_price,live_price\nA1,Balm,beauty,twenty,15\n",
            "shop.csv:2: field 'list_price' must be a number",
        ),
        (
            "id,name,category,list_price,live_price,variants\nA1,Balm,beauty,20,15,small=4\n",
            "shop.csv:2: field 'variants'",
        ),
        ("id,name,list_price\n", "shop.csv:1: missing column(s) category, live_price"),
        (
            "id,name,category,list_price,live_price\nA1,Balm,beauty,20,15\na1,Balm 2,beauty,20,15\n",
            "'A1' appears twice",
        ),
    ],
)
def test_a_bad_catalog_file_names_the_line_and_field(tmp_path, content, fragment):
    path = tmp_path / "shop.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CatalogError) as e:
        import_catalog(path)
    assert fragment in str(e.value)


def test_bad_json_names_the_line(tmp_path):
    path = tmp_path / "shop.json"
    path.write_text('{"products": [\n{"id": }]}')
    with pytest.raises(CatalogError, match=r"shop.json:2: not valid JSON"):
        import_catalog(path)
