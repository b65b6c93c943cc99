"""The loop's runs go through the eval runner: any cases (a failing slice, an evolution suite),
resumable, with errors counted and run again on the next call."""

from __future__ import annotations

from typing import Any

import pytest

import harnessctl.augment.variants as augment_variants
from harnessctl.eval.store import RunStore
from harnessctl.eval.suites import load_suite
from harnessctl.loop.evaluate import evaluate_items, standard_items
from harnessctl.models.base import ModelError
from harnessctl.sim.oracle import OracleModel
from tests.conftest import LIVECOMMERCE

from .conftest import EVALS


class _Refusing:
    def generate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], settings: Any) -> Any:
        raise ModelError("outage: the model refused the request")


class OutageModel(OracleModel):
    """The oracle, except that while ``down`` it fails on the cases named in ``failing``."""

    name = "outage"
    cacheable = False

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing, self.down, self.episodes = failing, True, []

    def for_episode(self, case: Any, harness: Any) -> Any:
        self.episodes.append(case.id)
        return _Refusing() if self.down and case.id in self.failing else super().for_episode(case, harness)


def test_a_slice_of_cases_under_its_own_suite_name_is_an_ordinary_run_and_errored_cases_run_again(tmp_path):
    live = standard_items(["livestream"], EVALS, limit=6)["livestream"]
    items = {"livestream": live[:3], "failing-slice": live[3:]}
    model = OutageModel({live[1].id, live[4].id})
    common = {
        "model": "outage",
        "backend": model,
        "harness_path": LIVECOMMERCE,
        "runs_dir": tmp_path,
        "run_id": "slice",
        "evals_dir": EVALS,
    }

    first = evaluate_items(items, **common)
    assert first.ran == 6
    errored = sorted(r.case_id for r in first.results if r.error)
    assert errored == sorted([live[1].id, live[4].id])
    assert first.summary["errors"] == 2 and all("refused" in r.error for r in first.results if r.error)
    assert (first.store.root / "cases" / "failing-slice.jsonl").is_file()  # a suite the runner does not know

    model.down, model.episodes = False, []
    second = evaluate_items(items, **common)
    assert sorted(set(model.episodes)) == errored and second.ran == 2  # only the errored cases, nothing else
    latest = {r.case_id: r for r in RunStore.open(second.store.root).results()}
    assert len(latest) == 6 and not any(r.error for r in latest.values())
    assert second.summary["errors"] == 0 and set(second.scores()) == {"livestream", "failing-slice"}


@pytest.fixture
def no_hsa(monkeypatch):
    """HSA refuses to run: a held-out variant made during the test is a failure."""

    def refuse(*args, **kwargs):
        raise AssertionError("make_variant ran: the variant should have been loaded from its frozen file")

    monkeypatch.setattr(augment_variants, "make_variant", refuse)


def test_a_loop_run_of_held_out_variants_loads_the_frozen_ones_and_its_manifest_says_so(tmp_path, no_hsa):
    variant = [i for i in load_suite("variant", EVALS) if (i.harness or {}).get("kind") == "variant"][:4]
    run = evaluate_items(
        {"variant": variant},
        model="oracle",
        backend=OracleModel(),
        harness_path=LIVECOMMERCE,
        runs_dir=tmp_path,
        run_id="held-out",
        evals_dir=EVALS,
    )
    record = run.summary["variants"]
    assert record["frozen"] == len({i.harness["id"] for i in variant}) and record["regenerated"] == 0
    assert run.store.manifest["variants"] == record  # written before the cases ran, as the summary says after
