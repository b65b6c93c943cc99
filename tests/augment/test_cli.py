"""`harnessctl augment` end to end, through the real CLI on temporary folders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def written(livecommerce_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("variants") / "a"
    result = _run("augment", "--n", 3, "--seed", 5, "--strength", 0.7, "--out", out, "-H", livecommerce_path, "--json")
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout)


def test_augment_writes_valid_variant_folders_with_manifests_and_an_index(written, livecommerce_path):
    out, report = written
    assert report["written"] == ["train-s5-0000", "train-s5-0001", "train-s5-0002"]
    index = json.loads((out / "index.json").read_text())
    assert [v["id"] for v in index["variants"]] == report["written"]
    assert index["source"]["name"] == "livecommerce" and index["source"]["version"] == "v3"
    for vid in report["written"]:
        assert _run("validate", out / vid).exit_code == 0
        manifest = json.loads((out / vid / "manifest.json").read_text())
        assert manifest["variant_id"] == vid and manifest["split"] == "train"
        assert {op["family"] for op in manifest["operators"]} == {"skills", "skill_content", "tools", "prompt", "hooks"}
        surface = manifest["surface"]
        for name, element in surface["keys_by_name"].items():
            kind, _, key = element.partition(":")
            assert kind == "skill_loader" or surface[kind + "s"][key] == name


def test_the_same_seed_writes_the_same_bytes(written, livecommerce_path, tmp_path):
    out, _ = written
    again = tmp_path / "b"
    result = _run(
        "augment", "--n", 3, "--seed", 5, "--strength", 0.7, "--out", again, "-H", livecommerce_path, "--jobs", 1
    )
    assert result.exit_code == 0, result.output
    assert _tree_hash(again) == _tree_hash(out)


def test_rerunning_resumes_and_other_settings_are_refused_unless_forced(written, livecommerce_path, tmp_path):
    import shutil

    out = tmp_path / "a"
    shutil.copytree(written[0], out)
    shutil.rmtree(out / "train-s5-0001")  # as if the run had been stopped there
    result = _run("augment", "--n", 3, "--seed", 5, "--strength", 0.7, "--out", out, "-H", livecommerce_path, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["written"] == ["train-s5-0001"]
    assert _tree_hash(out) == _tree_hash(written[0])

    refused = _run("augment", "--n", 3, "--seed", 6, "--out", out, "-H", livecommerce_path)
    assert refused.exit_code == 2
    assert "another spec" in refused.stderr and "--force" in refused.stderr and "Traceback" not in refused.output
    forced = _run("augment", "--n", 2, "--seed", 6, "--out", out, "-H", livecommerce_path, "--force", "--json")
    assert forced.exit_code == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["train-s6-0000", "train-s6-0001"]


def test_bad_input_is_a_clear_message_and_exit_code_2(livecommerce_path, tmp_path):
    bad_ops = _run("augment", "--n", 1, "--ops", "tools,promt", "--out", tmp_path / "x", "-H", livecommerce_path)
    assert bad_ops.exit_code == 2 and "unknown operator or family 'promt'" in bad_ops.stderr
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    busy = _run("augment", "--n", 1, "--out", tmp_path / "busy", "-H", livecommerce_path)
    assert busy.exit_code == 2 and "not empty" in busy.stderr
    split = _run("augment", "--trajectories", 5, "--split", "heldout", "--out", tmp_path / "d", "-H", livecommerce_path)
    assert split.exit_code == 2 and "training vocabulary" in split.stderr
    none = _run("augment", "--n", 0, "--out", tmp_path / "none", "-H", livecommerce_path)
    assert none.exit_code == 2 and "--n must be at least 1" in none.stderr and not (tmp_path / "none").exists()
    empty = _run("augment", "--trajectories", 0, "--out", tmp_path / "e", "-H", livecommerce_path)
    assert empty.exit_code == 2 and "--trajectories must be at least 1" in empty.stderr
    (tmp_path / "afile").write_text("not a folder")
    under = _run("augment", "--n", 1, "--out", tmp_path / "afile" / "sub", "-H", livecommerce_path)
    assert under.exit_code == 2 and "afile" in under.stderr and "Traceback" not in under.stderr


def test_preview_shows_one_variant_as_a_semantic_diff(livecommerce_path):
    shown = _run("augment", "--preview", "--seed", 1, "--strength", 1.0, "-H", livecommerce_path)
    assert shown.exit_code == 0, shown.output
    assert "train-s1-0000" in shown.stdout and "renamed" in shown.stdout
    as_json = json.loads(
        _run(
            "augment", "--preview", "--seed", 1, "--strength", 1.0, "--ops", "tools", "-H", livecommerce_path, "--json"
        ).stdout
    )
    kinds = {(c["element"], c["kind"]) for c in as_json["diff"]["changes"]}
    assert ("tool", "renamed") in kinds and not any(e == "skill" for e, _ in kinds)
    assert as_json["manifest"]["ops"] == ["rewrite_tool_descriptions", "rename_tools"]


def test_trajectories_and_the_fixed_harness_baseline_from_the_cli(livecommerce_path, tmp_path):
    hsa = _run(
        "augment",
        "--trajectories",
        40,
        "--n",
        5,
        "--seed",
        2,
        "--out",
        tmp_path / "hsa",
        "-H",
        livecommerce_path,
        "--json",
    )
    assert hsa.exit_code == 0, hsa.output
    report = json.loads(hsa.stdout)
    assert report["train"] + report["validation"] == 40 and report["acceptance_rate"] == 1.0
    fixed = _run(
        "augment",
        "--trajectories",
        40,
        "--fixed-harness",
        "--seed",
        2,
        "--out",
        tmp_path / "fixed",
        "-H",
        livecommerce_path,
    )
    assert fixed.exit_code == 0 and "40" in fixed.stdout
    for name in ("train.jsonl", "validation.jsonl", "pairs.jsonl", "summary.json", "dataset.json"):
        assert (tmp_path / "hsa" / name).is_file()


def _viewer_messages(folder: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]
    return {r["meta"]["case_id"]: [m["content"] for m in r["messages"] if m["role"] == "user"][-1] for r in rows}


def test_reworded_viewer_messages_are_a_dataset_setting_that_resumes_and_is_never_mixed(livecommerce_path, tmp_path):
    def build(out: Path, *extra) -> object:
        return _run(
            "augment",
            "--trajectories",
            60,
            "--fixed-harness",
            "--seed",
            4,
            "--out",
            out,
            "-H",
            livecommerce_path,
            *extra,
        )

    assert build(tmp_path / "plain").exit_code == 0
    varied = build(tmp_path / "varied", "--vary-wording", 0.5)
    assert varied.exit_code == 0, varied.output
    # The setting is recorded only when used, so datasets from before it still resume.
    assert "vary_wording" not in json.loads((tmp_path / "plain" / "dataset.json").read_text())["spec"]
    assert json.loads((tmp_path / "varied" / "dataset.json").read_text())["spec"]["vary_wording"] == 0.5
    plain, reworded = _viewer_messages(tmp_path / "plain"), _viewer_messages(tmp_path / "varied")
    assert plain.keys() == reworded.keys()
    differ = sum(plain[k] != reworded[k] for k in plain)
    assert 0.25 * len(plain) < differ < 0.75 * len(plain)
    assert build(tmp_path / "varied", "--vary-wording", 0.5).exit_code == 0  # the same setting resumes
    other = build(tmp_path / "varied", "--vary-wording", 0.2)
    assert other.exit_code == 2 and "vary_wording differ" in other.stderr
    unset = build(tmp_path / "varied")
    assert unset.exit_code == 2 and "vary_wording differ" in unset.stderr
    bad = build(tmp_path / "bad", "--vary-wording", 1.5)
    assert bad.exit_code == 2 and "--vary-wording" in bad.stderr


def test_a_team_adds_its_viewers_phrasings_to_a_dataset_which_records_them_and_resumes(livecommerce_path, tmp_path):
    phrasings = tmp_path / "viewers.yaml"
    phrasings.write_text(
        "phrasings:\n  price:\n    - 'hw much rn for {this}'\n    - '{name} cost??'\n", encoding="utf-8"
    )

    def build(*extra) -> object:
        args = ("augment", "--trajectories", 80, "--fixed-harness", "--seed", 4, "--out", tmp_path / "data")
        return _run(*args, "-H", livecommerce_path, *extra)

    result = build("--phrasings", phrasings)
    assert result.exit_code == 0, result.output
    spec = json.loads((tmp_path / "data" / "dataset.json").read_text())["spec"]
    assert spec["phrasings"] == {"price": ["hw much rn for {this}", "{name} cost??"]}
    messages = list(_viewer_messages(tmp_path / "data").values())
    assert any("hw much rn for" in m.lower() or "cost??" in m for m in messages)
    assert build("--phrasings", phrasings).exit_code == 0  # the same file resumes
    phrasings.write_text("phrasings:\n  price:\n    - 'hw much rn for {this}'\n", encoding="utf-8")
    changed = build("--phrasings", phrasings)
    assert changed.exit_code == 2 and "phrasings differ" in changed.stderr


def test_a_bad_phrasings_file_is_refused_with_its_line_before_anything_is_built(livecommerce_path, tmp_path):
    phrasings = tmp_path / "viewers.yaml"
    phrasings.write_text("phrasings:\n  stock_variant:\n    - 'sold out?'\n", encoding="utf-8")
    out = tmp_path / "data"
    result = _run("augment", "--trajectories", 20, "--phrasings", phrasings, "--out", out, "-H", livecommerce_path)
    assert result.exit_code == 2
    assert f"{phrasings}:3:7: stock_variant[0] needs {{variant}}" in result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_dataset_options_without_trajectories_are_refused_not_ignored(livecommerce_path, tmp_path):
    result = _run(
        "augment", "--n", 1, "--vary-wording", 0.5, "--faults", 0.1, "--out", tmp_path / "v", "-H", livecommerce_path
    )
    assert result.exit_code == 2
    assert "--faults, --vary-wording shape a trajectory dataset: add --trajectories N, or drop them" in result.stderr
    assert not (tmp_path / "v").exists()


def test_phrasings_check_counts_near_copies_of_held_out_messages_and_strict_refuses_them(tmp_path):
    phrasings = tmp_path / "viewers.yaml"
    # "how much for it rn" shares three of its five words with a held-out price message
    phrasings.write_text("phrasings:\n  price:\n    - 'what does {this} go for'\n    - 'how much for it rn'\n")
    plain = _run("phrasings", "check", phrasings)
    assert plain.exit_code == 0
    assert "2 phrasings of 1 kinds" in plain.output
    assert "note: 1 share half their words or more with a held-out suite message of their kind (price[1])" in (
        " ".join(plain.output.split())
    )
    strict = _run("phrasings", "check", phrasings, "--strict")
    assert strict.exit_code == 2
    assert f"{phrasings}:4:7: price[1] shares half its words or more with a held-out price message" in strict.stderr
    assert "price[0]" not in strict.stderr and "Traceback" not in strict.output


def test_quoted_skill_notes_are_recorded_in_the_dataset_and_refused_with_a_teacher(livecommerce_path, tmp_path):
    def build(*extra) -> object:
        args = ("augment", "--trajectories", 30, "--n", 3, "--seed", 5, "--out", tmp_path / "data")
        return _run(*args, "-H", livecommerce_path, *extra)

    result = build("--quote-skills")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "data" / "dataset.json").read_text())["spec"]["quote_skills"] is True
    rows = [json.loads(x) for x in (tmp_path / "data" / "train.jsonl").read_text().splitlines()]
    first_turns = [next(m for m in r["messages"] if m["role"] == "assistant") for r in rows]
    assert all(t["content"].startswith("<think>") for t in first_turns if t.get("tool_calls"))
    plain = build()  # the same folder without the notes is another dataset
    assert plain.exit_code == 2 and "quote_skills differ" in plain.stderr
    taught = _run(
        "augment",
        "--trajectories",
        5,
        "--quote-skills",
        "--teacher",
        "openai/x",
        "--out",
        tmp_path / "t",
        "-H",
        livecommerce_path,
    )
    assert taught.exit_code == 2 and "quote_skills" in taught.stderr and "Traceback" not in taught.output
