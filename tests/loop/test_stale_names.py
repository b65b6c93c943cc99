"""Stale names: after an edit renames a tool or a skill, a model that still uses the old name is
diagnosed on the element the name meant, with the version it comes from, and `edit` proposes
giving the element its name back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessctl.eval.suites import load_suite
from harnessctl.harness import load_harness
from harnessctl.loop.failures import FailureItem
from harnessctl.loop.stale import (
    FormerName,
    FormerNameIndex,
    StaleCall,
    former_names,
    relabel_stale,
    stale_calls,
    summarize_stale,
    surface_names,
)
from tests.conftest import LIVECOMMERCE, REPO_ROOT

from .support import git, harness_repo, hc

EVALS = REPO_ROOT / "evals"
WEEKLY_EDIT = REPO_ROOT / "scripts" / "weekly-edit.yaml"


def _renamed(tool: str | None = None, skill: str | None = None):
    h = load_harness(LIVECOMMERCE)
    if tool:
        h.tool("promotions").name = tool
    if skill:
        h.skill("price_promo").name = skill
    return h


def test_every_name_a_model_can_use_maps_to_its_element():
    names = surface_names(load_harness(LIVECOMMERCE))
    assert names[("tool", "load_skill")] == "skill_loader:load_skill"
    assert all(
        el.startswith("tool:") for (kind, _), el in names.items() if kind == "tool" and el != "skill_loader:load_skill"
    )
    assert {el for (kind, _), el in names.items() if kind == "skill"} == {
        f"skill:{s.key}" for s in load_harness(LIVECOMMERCE).skills
    }


def test_former_names_are_the_earlier_names_the_current_harness_no_longer_uses_latest_version_wins():
    now = _renamed(tool="find_deals", skill="price_and_deals")
    v1, v2 = _renamed(tool="deals_v1"), load_harness(LIVECOMMERCE)
    former = former_names(now, [("v1", v1), ("v2", v2)])
    deals = former[("tool", v2.tool("promotions").name)]
    assert (deals.element, deals.version, deals.current) == ("tool:promotions", "v2", "find_deals")
    assert former[("tool", "deals_v1")].version == "v1"
    assert former[("skill", v2.skill("price_promo").name)].current == "price_and_deals"
    # names both versions share with the current harness are never stale
    assert ("tool", now.tool("stock_check").name) not in former


def test_a_call_by_a_former_tool_name_or_a_refused_former_skill_name_is_stale():
    former = {
        ("tool", "get_deals"): FormerName("get_deals", "tool:promotions", "tool", "v3", "find_deals"),
        ("skill", "explain_price"): FormerName("explain_price", "skill:price_promo", "skill", "v3", "pricing"),
    }
    record = {
        "tool_steps": [
            {"name": "get_deals", "key": None, "turn": 1},
            {"name": "load_skill", "key": "load_skill", "valid": False, "arguments": {"name": "explain_price"}},
            {"name": "load_skill", "key": "load_skill", "valid": True, "arguments": {"name": "pricing"}},
            {"name": "made_up", "key": None},  # unknown, but no version had it
            {"name": "get_deals", "key": None, "error": "budget"},  # never ran: a budget matter
        ]
    }
    calls = stale_calls(record, former)
    assert [(c.former.name, c.turn) for c in calls] == [("get_deals", 1), ("explain_price", 0)]
    assert stale_calls(record, {}) == []


def test_relabelling_moves_the_name_failure_and_what_it_stood_for_onto_the_element_meant():
    deals = FormerName("get_deals", "tool:promotions", "tool", "v3", "find_deals")
    pricing = FormerName("explain_price", "skill:price_promo", "skill", "v3", "pricing")
    items = [
        FailureItem("invalid_args", "tool_rationality", "tool:load_skill", "load_skill"),
        FailureItem("skipped_skill", "skill_selection", "skill:price_promo"),
        FailureItem("unknown_tool", "tool_rationality", "tool:(unknown name)", "get_deals"),
        FailureItem("missing_call", "tool_rationality", "rule:price_promo.check_deals", "promotions"),
        FailureItem("missing_call", "tool_rationality", "tool:stock_check", "stock_check"),
        FailureItem("over_length", "constraints", "constraint:max_reply_chars"),
    ]
    got = relabel_stale(items, [StaleCall(pricing), StaleCall(deals)])
    assert [(i.kind, i.component, i.element) for i in got] == [
        ("stale_name", "tool_rationality", "skill:price_promo"),
        ("stale_name", "skill_selection", "skill:price_promo"),
        ("stale_name", "tool_rationality", "tool:promotions"),
        ("stale_name", "tool_rationality", "tool:promotions"),
        ("missing_call", "tool_rationality", "tool:stock_check"),  # another tool: untouched
        ("over_length", "constraints", "constraint:max_reply_chars"),
    ]
    summary = summarize_stale({("ls", "a"): [StaleCall(deals), StaleCall(deals)], ("ls", "b"): [StaleCall(deals)]})
    assert summary == [
        {
            "name": "get_deals",
            "used_as": "tool",
            "element": "tool:promotions",
            "version": "v3",
            "current": "find_deals",
            "calls": 3,
            "cases": 2,
        }
    ]


def _evaluate(
    harness: Path,
    runs: Path,
    run_id: str,
    *,
    model: str = f"oracle-blind:{LIVECOMMERCE}",
    suite: str = "livestream",
    limit: int = 20,
) -> None:
    """``harnessctl eval`` through the real CLI; by default the policy that memorised v3's names."""
    proc = hc(
        "eval", "--suite", suite, "--limit", str(limit), "-j", "4", "-H", str(harness), "--evals-dir", str(EVALS),
        "--model", model, "--runs-dir", str(runs), "--run-id", run_id,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def edited_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The shipped harness (v3) in its own repository, this week's edit tagged v4, and a run of
    a policy that memorised v3's names evaluated under v4 through the real CLI."""
    tmp = tmp_path_factory.mktemp("stale")
    h = harness_repo(tmp, LIVECOMMERCE)
    assert hc("patch", str(WEEKLY_EDIT), "-H", str(h)).returncode == 0
    git(h, "commit", "-qam", "weekly edit")
    assert hc("tag", "v4", "-H", str(h), "-m", "deals renamed").returncode == 0
    runs = tmp / "runs"
    _evaluate(h, runs, "blind-v4")
    return h, runs


def test_diagnose_names_the_old_names_the_model_still_uses_after_a_rename(edited_run):
    h, runs = edited_run
    proc = hc("diagnose", "blind-v4", "--runs-dir", str(runs), "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    v3 = load_harness(LIVECOMMERCE)
    stale = {e["name"]: e for e in d["stale_names"]}
    deals = stale[v3.tool("promotions").name]
    assert (deals["element"], deals["version"], deals["current"]) == ("tool:promotions", "v3", "find_deals")
    pricing = stale[v3.skill("price_promo").name]
    assert (pricing["element"], pricing["current"]) == ("skill:price_promo", "price_and_deals")
    assert deals["calls"] >= deals["cases"] >= 1
    # the clusters carry the element the name meant, not an unknown name
    kinds = {(c["kind"], c["element"]) for c in d["clusters"]}
    assert ("stale_name", "tool:promotions") in kinds and ("stale_name", "skill:price_promo") in kinds
    assert not any(c["element"] == "tool:(unknown name)" for c in d["clusters"])

    human = hc("diagnose", "blind-v4", "--runs-dir", str(runs))
    assert "stale names: the model used 2 names its harness no longer has" in human.stdout
    assert "harnessctl edit blind-v4" in human.stdout


def test_edit_proposes_giving_a_renamed_element_its_former_name_back(edited_run):
    h, runs = edited_run
    proc = hc("edit", "blind-v4", "-H", str(h), "--runs-dir", str(runs), "--json")
    assert proc.returncode == 0, proc.stderr
    proposals = json.loads(proc.stdout)["proposals"]
    stale = [p for p in proposals if p["source"] == "rules:stale_name"]
    old = load_harness(LIVECOMMERCE).tool("promotions").name
    assert {"op": "set", "element": "tool", "key": "promotions", "field": "name", "value": old} in [
        op for p in stale for op in p["ops"]
    ]
    assert all(p["issues"] == [] for p in stale)


def test_without_history_an_unknown_name_stays_unknown(tmp_path):
    h = tmp_path / "plain"  # the same edit, in a folder outside git: no earlier version to consult
    shutil.copytree(LIVECOMMERCE, h)
    assert hc("patch", str(WEEKLY_EDIT), "-H", str(h)).returncode == 0
    runs = tmp_path / "runs"
    _evaluate(h, runs, "plain")
    d = json.loads(hc("diagnose", "plain", "--runs-dir", str(runs), "--json").stdout)
    assert d["stale_names"] == []
    assert any(c["kind"] == "unknown_tool" for c in d["clusters"])


def test_the_loop_gives_the_names_back_when_the_served_model_cannot_follow_the_rename(edited_run, tmp_path):
    h, _ = edited_run
    proc = hc(
        "loop", "-m", f"oracle-blind:{LIVECOMMERCE}", "-H", str(h), "--suite", "livestream", "--limit", "20",
        "--budget", "2", "--evals-dir", str(EVALS), "--loops-dir", str(tmp_path / "loops"), "-j", "4", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    kept = [r for r in d["rows"] if r["kept"]]
    assert kept and kept[0]["source"] == "rules:stale_name"
    assert d["final"]["livestream"] > d["baseline"]["livestream"]


def test_the_study_counts_variant_episodes_that_lean_on_the_source_harnesss_names(tmp_path):
    from harnessctl.experiment.results import arm_metrics, component_table

    runs = tmp_path / "runs"
    for model in ("oracle", f"oracle-blind:{LIVECOMMERCE}"):
        _evaluate(LIVECOMMERCE, runs, model.split(":")[0], model=model, suite="variant", limit=12)
    follows, blind = arm_metrics(runs / "oracle"), arm_metrics(runs / "oracle-blind")
    # the policy that reads each variant never uses a name the variant renamed; the one that
    # memorised the shipped harness does
    assert follows["stale_names"] == {"episodes": 12, "cases": 0, "calls": 0}
    assert blind["stale_names"]["episodes"] == 12 and blind["stale_names"]["calls"] >= blind["stale_names"]["cases"] > 0
    arms = [
        {"label": "follows", "status": "done", "metrics": follows},
        {"label": "blind", "status": "done", "metrics": blind},
    ]
    table = "\n".join(component_table({"arms": arms}))
    assert "old name (calls)" in table and "| 0 of 12 (0) |" in table


def test_a_version_that_no_longer_loads_is_left_out_of_the_history_not_an_error(tmp_path):
    from harnessctl.loop.stale import harness_history

    h = harness_repo(tmp_path, LIVECOMMERCE)
    original = (h / "harness.yaml").read_text()
    (h / "harness.yaml").write_text("name: livecommerce\nversion: v9\n")  # a broken snapshot, later fixed
    git(h, "commit", "-qam", "broken")
    (h / "harness.yaml").write_text(original)
    git(h, "commit", "-qam", "fixed")
    versions = [v for v, _ in harness_history(h)]
    assert "v9" not in versions and versions == ["v3"]
    assert harness_history(tmp_path / "nowhere") == []


@pytest.mark.parametrize(("evals_dir", "source"), [(EVALS, "frozen"), (None, "regenerated")])
def test_the_former_names_of_a_variant_case_come_from_its_frozen_variant_where_one_is_given(evals_dir, source):
    item = next(i for i in load_suite("variant", EVALS) if (i.harness or {}).get("kind") == "variant")
    index = FormerNameIndex(LIVECOMMERCE, {("variant", item.id): item}, evals_dir)
    index.for_case("variant", item.id)
    how = index._resolver.variants[item.harness["id"]]
    assert how["source"] == source
    if evals_dir is None:
        assert "no suites folder" in how["why"]
