"""The gate plays the deployed model with the harness-blind reference pinned to production's
surface: a rename production's model cannot follow is refused (nothing tagged, the pointer
unmoved), the same rename passes for the oracle, and the verdict holds whichever cases the gate
samples. Every test works in a scratch git repository holding a copy of the shipped harness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessctl.loop.release import GATE_PER_ELEMENT, GATE_SUITE_CASES, GateConfig, release
from harnessctl.models.base import ModelError
from harnessctl.models.registry import memorised_surface, resolve_model
from tests.conftest import LIVECOMMERCE

from .conftest import EVALS
from .support import git, harness_repo, run_cli

STOCK_TOOL = "tools/stock_check.yaml"


def _rename_stock_tool(folder: Path) -> str:
    """Give the stock tool a new surface name (its key stays) and commit; returns the new name."""
    path = folder / STOCK_TOOL
    text = path.read_text(encoding="utf-8")
    old = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("name:"))
    new = f"{old}_v2"
    path.write_text(text.replace(f"name: {old}", f"name: {new}", 1), encoding="utf-8")
    git(folder.parent.parent, "commit", "-qam", f"rename the stock tool to {new}")
    return new


def _renamed_repo(tmp: Path) -> Path:
    """A scratch repository with v1 in production and the stock tool renamed in a later commit."""
    folder = harness_repo(tmp, LIVECOMMERCE)
    assert release(folder, "v1", gate=None, notes_dir=tmp / "notes").passed
    _rename_stock_tool(folder)
    return folder


@pytest.fixture
def renamed(tmp_path):
    """The renamed repository, for a test that releases (and so changes it)."""
    return _renamed_repo(tmp_path)


@pytest.fixture(scope="module")
def renamed_shared(tmp_path_factory):
    """The renamed repository, shared by the tests that only read it (dry runs, resolving)."""
    return _renamed_repo(tmp_path_factory.mktemp("blind"))


def _ref(repo: Path, name: str) -> str:
    return git(repo, "rev-parse", "-q", "--verify", name).strip()


def test_the_gate_refuses_the_rename_for_oracle_blind_and_releases_it_for_the_oracle(tmp_path, renamed):
    repo = renamed.parent.parent
    production = _ref(repo, "refs/production/livecommerce")
    common = ["-H", str(renamed), "--runs-dir", str(tmp_path / "runs"), "--notes-dir", str(tmp_path / "notes")]
    common += ["--evals-dir", str(EVALS), "--no-cache", "--json"]

    blind = run_cli("release", "v9", "--gate", "--model", "oracle-blind", *common)
    assert blind.exit_code == 1, blind.output
    result = json.loads(blind.stdout)
    assert result["reference"]["version"] == "v1" and result["reference"]["commit"] == _ref(repo, "v1^{commit}")
    assert result["comparison"]["gate"] == "interval"
    failing = {f["element"]: f["cases"] for f in result["failing"] if f["element"]}
    assert list(failing) == ["tool:stock_check"] and failing["tool:stock_check"]
    assert any(
        r.startswith("element tool:stock_check:") and failing["tool:stock_check"][0] in r for r in result["reasons"]
    )
    assert "v9" not in git(repo, "tag").split()
    assert _ref(repo, "refs/production/livecommerce") == production
    assert not (tmp_path / "notes" / "livecommerce-v9.md").exists()

    # compare shows which surface each run's reference memorised
    shown = run_cli("compare", result["runs"]["production"], result["runs"]["candidate"])
    assert shown.exit_code == 1 and "memorised livecommerce v1" in shown.output

    oracle = run_cli("release", "v9", "--gate", "--model", "oracle", *common)
    assert oracle.exit_code == 0, oracle.output
    assert "v9" in git(repo, "tag").split()
    assert _ref(repo, "refs/production/livecommerce") == _ref(repo, "v9^{commit}")
    note = (tmp_path / "notes" / "livecommerce-v9.md").read_text(encoding="utf-8")
    assert "95% interval" in note and "| livestream |" in note and "Rule: interval" in note


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_verdict_holds_whichever_cases_the_gate_samples(tmp_path, renamed_shared, seed):
    renamed = renamed_shared

    def gate(model: str) -> GateConfig:
        return GateConfig(model=model, runs_dir=str(tmp_path / "runs"), evals_dir=str(EVALS), cache=False, seed=seed)

    assert (gate("oracle").limit, gate("oracle").per_element) == (GATE_SUITE_CASES, GATE_PER_ELEMENT)
    blind = release(renamed, "v9", gate=gate("oracle-blind"), notes_dir=tmp_path / "notes", dry_run=True)
    assert not blind.passed
    assert [f["element"] for f in blind.failing if f["element"]] == ["tool:stock_check"]
    oracle = release(renamed, "v9", gate=gate("oracle"), notes_dir=tmp_path / "notes", dry_run=True)
    assert oracle.passed, oracle.reasons


def test_oracle_blind_at_a_revision_memorises_that_revision(renamed_shared):
    renamed = renamed_shared
    repo = renamed.parent.parent
    at_v1 = resolve_model(f"oracle-blind:{renamed}@v1")
    at_head = resolve_model(f"oracle-blind:{renamed}@HEAD")
    old, new = (next(t.name for t in m.reference.tools if t.key == "stock_check") for m in (at_v1, at_head))
    assert new == f"{old}_v2"
    assert at_v1.memorised["commit"] == _ref(repo, "v1^{commit}") and at_v1.memorised["label"].startswith(
        "livecommerce v1"
    )
    assert memorised_surface(f"oracle-blind:{renamed}")["commit"] is None  # a folder still works
    with pytest.raises(ModelError, match="unknown version"):
        resolve_model(f"oracle-blind:{renamed}@v7")
    with pytest.raises(ModelError, match="after @"):
        resolve_model("oracle-blind@")
