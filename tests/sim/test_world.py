"""Tool backends for every tool of the shipped harness, and faults injected per call."""

from __future__ import annotations

import json

import pytest

from harnessctl.harness.backends import get_backend, known_backends
from harnessctl.runtime.environment import MalformedResult, ToolEnvironment, ToolError, ToolTimeout
from harnessctl.sim import Case, World
from harnessctl.sim.backends import SIM_BACKENDS

GOOD_ARGS = {
    "sim.search_products": {"query": "linen shirt"},
    "sim.get_product": {"product_id": "P021"},
    "sim.get_stock": {"product_id": "P021", "variant": "m"},
    "sim.get_promotions": {"product_id": "P001"},
    "sim.estimate_shipping": {"region": "Coral Bay", "product_id": "P001"},
    "sim.get_order_status": {"order_id": "lm145304"},
    "sim.get_return_policy": {"product_id": "P033"},
    "sim.handoff_to_human": {"reason": "damaged item", "urgency": "high"},
}
BAD_ARGS = {
    "sim.get_product": ({"product_id": "P999"}, "no product 'P999'"),
    "sim.get_stock": ({"product_id": "P021", "variant": "XXL"}, "no variant 'XXL'; variants are S, M, L, XL"),
    "sim.get_promotions": ({}, "product_id is required"),
    "sim.estimate_shipping": ({"region": "mars"}, "unknown region 'mars'; regions are central, east"),
    "sim.get_order_status": ({"order_id": "LM000000"}, "no order 'LM000000'"),
    "sim.get_return_policy": ({"product_id": "X"}, "no product 'X'"),
    "sim.handoff_to_human": ({"reason": "x", "urgency": "asap"}, "urgency must be low, normal or high"),
}


def test_every_backend_of_the_shipped_harness_is_registered(shipped):
    assert {t.backend for t in shipped.tools} == set(SIM_BACKENDS)
    assert set(SIM_BACKENDS) <= known_backends()


@pytest.mark.parametrize("backend", SIM_BACKENDS)
def test_backends_return_json_data(backend):
    result = get_backend(backend)(World(), GOOD_ARGS[backend])
    assert json.loads(json.dumps(result)) == result and result


def test_backend_results_carry_what_the_replies_need():
    w = World()
    assert w.call("sim.search_products", {"query": "linen shirt"})["results"][0]["id"] == "P021"
    stock = w.call("sim.get_stock", {"product_id": "P021", "variant": "m"})
    assert stock["requested"] == "M" and stock["total"] == sum(v["stock"] for v in stock["variants"])
    promos = w.call("sim.get_promotions", {"product_id": "P001"})
    assert "HOME12" not in {c["code"] for c in promos["coupons"]} and promos["as_of"] == w.catalog.now
    assert w.call("sim.estimate_shipping", {"region": "Coral Bay"})["region"] == "islands"
    assert w.call("sim.get_order_status", {"order_id": "lm145304"})["order_id"] == "LM145304"


def test_the_handoff_ticket_is_stable_per_viewer():
    case = Case(id="c", intent="human_request", query="a person pls")
    case.context.viewer = {"handle": "@lily_b"}
    a = World(case=case).call("sim.handoff_to_human", {"reason": "x"})["ticket"]
    assert a == World(case=case).call("sim.handoff_to_human", {"reason": "y"})["ticket"]
    assert a.startswith("HT") and len(a) == 6


@pytest.mark.parametrize("backend", sorted(BAD_ARGS))
def test_bad_ids_raise_a_clear_tool_error(backend):
    args, fragment = BAD_ARGS[backend]
    with pytest.raises(ToolError) as e:
        World().call(backend, args)
    assert fragment in str(e.value)


def test_the_case_fault_plan_applies_per_call_of_the_tool():
    case = Case(
        id="c", intent="stock", query="?", faults={"stock_check": ["timeout", "error", "malformed", "empty", "ok"]}
    )
    w = World(case=case)
    args = {"product_id": "P001"}
    with pytest.raises(ToolTimeout):
        w.call("sim.get_stock", args, tool_key="stock_check", timeout_s=3)
    with pytest.raises(ToolError, match="503"):
        w.call("sim.get_stock", args, tool_key="stock_check")
    with pytest.raises(MalformedResult) as e:
        w.call("sim.get_stock", args, tool_key="stock_check")
    assert e.value.payload.startswith('{"product_id": "P001"') and not e.value.payload.endswith("}")
    assert w.call("sim.get_stock", args, tool_key="stock_check") == {}
    assert w.call("sim.get_stock", args, tool_key="stock_check")["variants"]
    assert w.call("sim.get_stock", args, tool_key="stock_check")["variants"]  # past the plan: ok
    assert [c["fault"] for c in w.calls] == ["timeout", "error", "malformed", "empty", "ok", "ok"]
    # Other tools are untouched by this plan.
    assert w.call("sim.get_product", args, tool_key="product_details")["id"] == "P001"


def test_random_faults_follow_the_rates_and_the_seed():
    case = Case(id="c", intent="price", query="?")

    def faults(seed):
        w = World(case=case, fault_rates={"timeout": 0.2, "error": 0.1}, seed=seed)
        return [w.fault_for("product_details") for _ in range(400)]

    a = faults(1)
    assert a == faults(1) and a != faults(2)
    assert 50 < a.count("timeout") < 110 and 20 < a.count("error") < 65
    with pytest.raises(ValueError, match="unknown fault kind"):
        World(fault_rates={"gremlins": 0.1})


def test_the_world_is_a_tool_environment():
    assert isinstance(World(), ToolEnvironment)
