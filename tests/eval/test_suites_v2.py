"""Suites version 2: viewer messages held out from training data, a harness-blind reference
that the variant suite fails, and comparisons only between runs of the same suites version."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.augment.trajectories import TrajectorySpec, dataset_cases
from harnessctl.cli.main import app
from harnessctl.eval.results import CaseResult
from harnessctl.eval.runner import HarnessResolver
from harnessctl.eval.store import RunStore
from harnessctl.eval.suites import (
    AGENT_SUITES,
    SUITE_FORMAT_VERSION,
    load_suite,
    sample,
    suite_index,
)
from harnessctl.models.base import ModelError
from harnessctl.models.registry import resolve_model
from harnessctl.runtime import run_episode
from harnessctl.sim import score_episode
from harnessctl.sim.templates import message_overlap

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"
HARNESS = REPO / "harnesses" / "livecommerce"


def test_suites_json_records_the_suites_version():
    index = suite_index(EVALS)
    assert index["suites_version"] == SUITE_FORMAT_VERSION == "2"
    assert all(s["suites_version"] == "2" for s in index["suites"].values())


@pytest.fixture(scope="module")
def default_training_cases():
    """The cases of the default 5,000-trajectory training set (`augment --trajectories 5000`)."""
    return dataset_cases(TrajectorySpec(n=5000))


@pytest.mark.parametrize("suite", AGENT_SUITES)
def test_no_suite_message_is_in_the_default_training_set(suite, default_training_cases):
    """The default 5,000-trajectory training set and each agent suite: no message verbatim, no
    template and no (template, product on screen) pair shared."""
    train = default_training_cases
    held = [i.case for i in load_suite(suite, EVALS)]
    overlap = message_overlap(train, held)
    assert overlap["templates"] >= 40 and overlap["pairs"] >= 300
    assert overlap["verbatim"] == 0
    assert overlap["templates_shared_share"] <= 0.05
    assert overlap["pairs_shared"] == 0


def _pass_rates(items, model_name: str) -> dict[str, float]:
    resolver = HarnessResolver(HARNESS)
    model = resolve_model(f"{model_name}:{HARNESS}" if model_name == "oracle-blind" else model_name)
    by: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for item in items:
        h = resolver.get(item.harness)
        b = score_episode(
            run_episode(h, item.case, model.for_episode(item.case, h), rendered=resolver.rendered(item.harness)),
            item.case,
        )
        variant = (item.harness or {}).get("id") if (item.harness or {}).get("kind") == "variant" else None
        for key in ["all", *item.families, *([f"variant:{variant}"] if variant else [])]:
            by[key][0] += b.passed
            by[key][1] += 1
    return {k: 100.0 * a / n for k, (a, n) in by.items()}


def test_the_variant_suite_measures_following_not_luck():
    """The oracle scores 100 on the variant suite; the reference that knows each task but sees
    only the shipped harness stays at or under 25 — and under every operator family."""
    items = sample(load_suite("variant", EVALS), 320)
    oracle, blind = _pass_rates(items, "oracle"), _pass_rates(items, "oracle-blind")
    assert oracle["all"] == 100.0
    assert blind["all"] <= 25.0
    for family in ("op:skills", "op:skill_content", "op:tools", "op:prompt", "op:hooks"):
        assert blind[family] < 50.0, (family, blind[family])
    # Every held-out variant holds a change the harness-blind reference fails.
    per_variant = {k: v for k, v in blind.items() if k.startswith("variant:")}
    assert len(per_variant) == 40 and max(per_variant.values()) < 100.0


def test_both_references_score_100_on_the_livestream_suite():
    items = sample(load_suite("livestream", EVALS), 150)
    assert _pass_rates(items, "oracle")["all"] == _pass_rates(items, "oracle-blind")["all"] == 100.0


def test_oracle_blind_needs_a_harness_to_have_memorised():
    assert resolve_model(f"oracle-blind:{HARNESS}").name == "oracle-blind"
    with pytest.raises(ModelError, match="no harness at"):
        resolve_model("oracle-blind:/no/such/folder")


def _run(root: Path, run_id: str, version: str) -> None:
    manifest = {"model": "m", "suites": {"livestream": {"version": f"{version}.51001", "suites_version": version}}}
    store = RunStore.create(root, manifest, run_id=run_id)
    for i in range(5):
        store.append(CaseResult(suite="livestream", case_id=f"c{i}", score=1.0, passed=True, termination="reply"))


def test_compare_refuses_runs_of_different_suites_versions_unless_forced(tmp_path):
    _run(tmp_path, "old", "1")
    _run(tmp_path, "new", "2")
    runner = CliRunner()
    res = runner.invoke(app, ["compare", "old", "new", "--runs-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert "suites version 1" in res.output and "--force" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["compare", "old", "new", "--runs-dir", str(tmp_path), "--force", "--json"])
    assert res.exit_code == 0, res.output


def test_a_run_of_oracle_blind_records_failure_entries_by_harness_element(tmp_path):
    """Through the CLI: the harness-blind reference on a spread sample of the variant suite; its
    records name, per failure, the kind, the score component and the harness element."""
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--suite",
            "variant",
            "--model",
            f"oracle-blind:{HARNESS}",
            "--limit",
            "12",
            "-j",
            "2",
            "--no-cache",
            "--runs-dir",
            str(tmp_path),
            "--evals-dir",
            str(EVALS),
            "-H",
            str(HARNESS),
            "--json",
        ],
    )
    assert res.exit_code in (0, 1), res.output
    store = RunStore.open(next(tmp_path.iterdir()).name, tmp_path)
    results = store.results()
    assert len(results) == 12 and store.manifest["suites"]["variant"]["suites_version"] == "2"
    failed = [r for r in results if not r.passed]
    assert failed
    for r in failed:
        entries = r.details["failure_entries"]
        assert [e["kind"] for e in entries] == [f.split(":")[0] for f in r.failures]
        assert all({"kind", "component", "element", "hard"} <= set(e) and e["element"]["type"] for e in entries)
