"""The on-screen product: whether an agent copies the id the viewer sees into its first lookup."""

from __future__ import annotations

from harnessctl.loop.onscreen import first_product_id, on_screen_product_use
from tests.conftest import LIVECOMMERCE, REPO_ROOT

from .support import hc


def test_a_policy_that_reads_the_overlay_names_the_on_screen_product_and_one_that_recalls_ids_does_not(tmp_path):
    from harnessctl.eval.store import RunStore
    from harnessctl.experiment.results import arm_metrics, component_table
    from harnessctl.loop.diagnose import load_run_items

    runs = tmp_path / "runs"
    proc = hc(
        "eval", "--suite", "livestream", "--limit", "24", "-j", "4", "-H", str(LIVECOMMERCE),
        "--evals-dir", str(REPO_ROOT / "evals"), "--model", "oracle", "--runs-dir", str(runs), "--run-id", "oracle",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    reads = arm_metrics(runs / "oracle")["on_screen"]["livestream"]
    assert reads["episodes"] >= 5 and reads["named"] == reads["lookups"] == reads["episodes"]

    # The same episodes with every product id replaced by one recalled from training: each still
    # looks a product up, and none names the one on screen.
    store = RunStore.open(runs / "oracle")
    results = store.results()
    for r in results:
        for step in r.record.get("tool_steps", []):
            args = step.get("arguments") or {}
            step["arguments"] = {k: "P999" if str(v).startswith("P0") else v for k, v in args.items()}
    items = load_run_items(store.root, REPO_ROOT / "evals", {"livestream"})
    recalls = on_screen_product_use(results, items)
    assert recalls == {"episodes": reads["episodes"], "lookups": reads["episodes"], "named": 0}

    arms = [{"label": "reads", "status": "done", "metrics": arm_metrics(runs / "oracle")}]
    table = "\n".join(component_table({"arms": arms}))
    assert "first product lookup names the one on screen" in table
    assert f"| {reads['named']} of {reads['episodes']} |" in table


def test_arguments_that_are_not_json_or_name_no_product_are_not_a_lookup():
    broken = {"tool_steps": [{"name": "get_product_details", "arguments": None}]}  # the runtime could not parse them
    order = {"tool_steps": [{"name": "track_order", "arguments": {"order_id": "LM1477"}}]}
    assert first_product_id(broken) is None and first_product_id(order) is None
    both = {"tool_steps": [{"name": "compare_products", "arguments": {"ids": ["P010", "P011"]}}]}
    assert first_product_id(both) == "P010"
