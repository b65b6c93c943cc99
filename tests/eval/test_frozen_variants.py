"""The variant suite's held-out harnesses are frozen data beside the suite (``evals/variants/``):
they are what the builder makes today; an eval of the harness they were frozen from loads them
and never runs HSA; an eval of another harness has HSA apply each spec to *that* harness and the
run says so; a missing or damaged file is an error that names it and the command that rebuilds it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harnessctl.augment.variants as augment_variants
from harnessctl.cli.main import app
from harnessctl.errors import HarnessctlError
from harnessctl.eval.build import freeze_variants
from harnessctl.eval.runner import EvalConfig, HarnessResolver, arun_items, build_manifest, run_eval
from harnessctl.eval.store import RunStore
from harnessctl.eval.suites import load_suite
from harnessctl.eval.variants import (
    VARIANTS_DIR,
    FrozenVariantError,
    frozen_path,
    harness_fingerprint,
    rebuild_command,
    regenerate_variant,
    variant_specs,
)
from harnessctl.harness import load_harness

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"
HARNESS = REPO / "harnesses" / "livecommerce"


@pytest.fixture(scope="module")
def variant_items():
    return load_suite("variant", EVALS)


@pytest.fixture(scope="module")
def hsa_items(variant_items):
    return [i for i in variant_items if (i.harness or {}).get("kind") == "variant"]


@pytest.fixture
def no_hsa(monkeypatch):
    """HSA refuses to run: any variant made during the test is a failure."""

    def refuse(*args, **kwargs):
        raise AssertionError("make_variant ran: the variant should have been loaded from its frozen file")

    monkeypatch.setattr(augment_variants, "make_variant", refuse)


@pytest.fixture
def counted_hsa(monkeypatch):
    """HSA runs as usual, each call counted."""
    calls = []
    real = augment_variants.make_variant

    def counting(*args, **kwargs):
        calls.append(kwargs.get("variant_id"))
        return real(*args, **kwargs)

    monkeypatch.setattr(augment_variants, "make_variant", counting)
    return calls


def _evals_copy(tmp_path: Path) -> Path:
    """A suites folder with the committed variant suite and its frozen variants."""
    folder = tmp_path / "evals"
    folder.mkdir()
    shutil.copy(EVALS / "variant.jsonl", folder / "variant.jsonl")
    shutil.copytree(EVALS / VARIANTS_DIR, folder / VARIANTS_DIR)
    return folder


def test_the_frozen_variants_are_what_the_builder_makes_today(variant_items):
    # Guards drift: a change to augment's operators (or to the simulator's feasibility floors)
    # changes the variants the builder makes; the benchmark keeps its frozen ones until rebuilt.
    today = freeze_variants(load_harness(HARNESS), variant_items)
    folder = EVALS / VARIANTS_DIR
    assert len(today) == 40
    stale = [name for name, text in today.items() if (folder / name).read_text(encoding="utf-8") != text]
    assert not stale, (
        f"{', '.join(f'evals/{VARIANTS_DIR}/{n}' for n in stale)}: not what the builder makes today (augment or "
        f"the variant specs changed); if the change to the benchmark is meant, rebuild with `{rebuild_command()}` "
        "and commit the files"
    )
    assert sorted(p.name for p in folder.glob("*.json")) == sorted(today), "a frozen file no case names"


def test_each_frozen_file_records_its_spec_and_the_harness_it_was_made_from(hsa_items):
    shipped = harness_fingerprint(load_harness(HARNESS))
    for spec_id, spec in variant_specs(hsa_items).items():
        doc = json.loads(frozen_path(spec_id, EVALS).read_text(encoding="utf-8"))
        assert doc["spec"] == spec and doc["id"] == spec_id
        assert doc["source"] == {"name": "livecommerce", "version": "v3", "fingerprint": shipped}
        assert "harness.yaml" in doc["documents"] and any(k.startswith("tools/") for k in doc["documents"])


def test_a_frozen_variant_is_the_harness_hsa_regenerates(hsa_items, no_hsa, monkeypatch):
    frozen = HarnessResolver(HARNESS, evals_dir=EVALS)
    spec = next(i.harness for i in hsa_items if i.harness["ops"] == ["tools"])
    loaded = frozen.get(spec)
    assert frozen.variants[spec["id"]]["source"] == "frozen"
    monkeypatch.undo()  # HSA allowed again, to compare
    made = regenerate_variant(load_harness(HARNESS), spec)
    assert loaded == made and loaded.root == str(HARNESS)
    assert [t.name for t in loaded.tools] != [t.name for t in load_harness(HARNESS).tools]  # it is a variant


def test_an_eval_of_the_shipped_harness_loads_frozen_variants_and_never_runs_hsa(tmp_path, no_hsa):
    outcome = run_eval(
        EvalConfig(
            suites=["variant"],
            model="oracle",
            limit=120,
            evals_dir=str(EVALS),
            runs_dir=str(tmp_path),
            harness_path=str(HARNESS),
        )
    )
    suite = outcome.summary["suites"]["variant"]
    assert suite["errors"] == 0 and suite["score"] == 100.0
    record = outcome.summary["variants"]
    assert record["frozen"] >= 30 and record["regenerated"] == 0
    entry = next(iter(record["by_variant"].values()))
    assert entry["source"] == "frozen" and entry["file"].endswith(".json") and len(entry["sha256"]) == 64
    assert outcome.store.manifest["variants"] == record  # the run's manifest says so too
    assert json.loads((outcome.store.root / "summary.json").read_text())["variants"] == record


def test_an_eval_of_another_harness_regenerates_its_variants_and_records_why(tmp_path, hsa_items, counted_hsa):
    shop = tmp_path / "myshop"
    shutil.copytree(HARNESS, shop)
    top = shop / "harness.yaml"
    top.write_text(top.read_text(encoding="utf-8").replace("Lumi Live", "Lumi Live Outlet"), encoding="utf-8")
    edited = load_harness(shop)
    assert harness_fingerprint(edited) != harness_fingerprint(load_harness(HARNESS))

    items = {"variant": hsa_items[:40]}
    config = EvalConfig(
        suites=["variant"],
        model="oracle",
        evals_dir=str(EVALS),
        runs_dir=str(tmp_path / "runs"),
        harness_path=str(shop),
    )
    store = RunStore.create(config.runs_dir, build_manifest(config, items, edited), run_id="myshop")
    outcome = asyncio.run(arun_items(config, items, store))
    record = outcome.summary["variants"]
    n = len(variant_specs(items["variant"]))
    assert record["regenerated"] == n and record["frozen"] == 0
    assert sorted(set(counted_hsa)) == sorted(record["by_variant"])  # HSA made each one, on myshop
    why = next(iter(record["by_variant"].values()))["why"]
    assert harness_fingerprint(edited) in why and "not the harness the suite froze its variants from" in why
    # The regenerated variants are variants of myshop, not the frozen variants of the shipped harness.
    resolver = HarnessResolver(shop, evals_dir=EVALS)
    spec = items["variant"][0].harness
    assert resolver.get(spec).variables["brand"] == "Lumi Live Outlet"


def test_a_missing_frozen_variant_names_the_file_and_the_command_that_rebuilds_it(tmp_path, hsa_items, no_hsa):
    evals = _evals_copy(tmp_path)
    spec = hsa_items[0].harness
    path = frozen_path(spec["id"], evals)
    path.unlink()
    with pytest.raises(FrozenVariantError) as e:
        HarnessResolver(HARNESS, evals_dir=evals).get(spec)
    assert isinstance(e.value, HarnessctlError)
    assert str(path) in str(e.value) and "missing" in str(e.value)
    assert f"harnessctl eval build-suites --suite variant --evals-dir {evals}" in str(e.value)


def _edited(text: str, description: str) -> str:
    doc = json.loads(text)
    doc["documents"]["harness.yaml"]["description"] = description
    return json.dumps(doc)


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda text: text[: len(text) // 2], "not a frozen variant"),
        (lambda text: json.dumps({**json.loads(text), "documents": "?"}), "not a frozen variant (no documents)"),
        (lambda text: text.replace('"strength": 0.', '"strength": 1', 1), "frozen from another spec"),
        (lambda text: _edited(text, "an edit by hand"), "do not match the fingerprint"),
        (lambda text: text.replace('"key": ', '"kee": '), "do not build a harness"),
    ],
    ids=["truncated", "no-documents", "another-spec", "edited", "unbuildable"],
)
def test_a_damaged_frozen_variant_names_the_file_and_the_command_that_rebuilds_it(
    tmp_path, hsa_items, no_hsa, damage, said
):
    evals = _evals_copy(tmp_path)
    spec = hsa_items[0].harness
    path = frozen_path(spec["id"], evals)
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(FrozenVariantError) as e:
        HarnessResolver(HARNESS, evals_dir=evals).get(spec)
    assert str(e.value).startswith(f"{path}: ") and said in str(e.value)
    assert f"`harnessctl eval build-suites --suite variant --evals-dir {evals}`" in str(e.value)


def test_the_command_line_says_how_the_variants_came_and_refuses_a_missing_one(tmp_path, no_hsa):
    runner = CliRunner()
    args = ["eval", "-s", "variant", "-m", "oracle", "--limit", "16", "-H", str(HARNESS), "--runs-dir"]
    result = runner.invoke(app, [*args, str(tmp_path / "runs"), "--evals-dir", str(EVALS)])
    assert result.exit_code == 0, result.output
    assert "frozen with the suite, none regenerated" in " ".join(result.stdout.split())

    evals = _evals_copy(tmp_path)
    shutil.rmtree(evals / VARIANTS_DIR)
    result = runner.invoke(app, [*args, str(tmp_path / "runs2"), "--evals-dir", str(evals)])
    text = " ".join(result.stderr.split())
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "frozen variant" in text and "missing" in text and "build-suites --suite variant" in text


def test_a_resolver_without_a_suites_folder_regenerates_and_says_so(hsa_items, counted_hsa):
    resolver = HarnessResolver(HARNESS)
    spec = hsa_items[0].harness
    resolver.get(spec)
    assert counted_hsa == [spec["id"]]
    assert resolver.variant_record()["by_variant"][spec["id"]] == {
        "source": "regenerated",
        "why": "no suites folder to read frozen variants from",
    }


def test_a_run_whose_frozen_variants_changed_since_it_started_is_not_resumed(tmp_path, hsa_items, no_hsa):
    from harnessctl.eval.runner import resume_eval
    from harnessctl.eval.store import RunError

    evals = _evals_copy(tmp_path)
    config = EvalConfig(
        suites=["variant"],
        model="oracle",
        limit=8,
        evals_dir=str(evals),
        runs_dir=str(tmp_path / "runs"),
        harness_path=str(HARNESS),
    )
    outcome = run_eval(config)
    frozen = outcome.store.manifest["variants"]["by_variant"]
    variant_id, entry = next(iter(sorted(frozen.items())))
    resume_eval(outcome.store.root)  # unchanged: resumes (nothing left to run)
    path = Path(entry["file"])
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # rebuilt, say
    with pytest.raises(RunError, match=f"frozen variant {variant_id} changed since run .* has another hash"):
        resume_eval(outcome.store.root)
    path.unlink()
    with pytest.raises(RunError, match="is gone"):
        resume_eval(outcome.store.root)
