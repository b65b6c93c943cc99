"""Trajectory datasets: consistent with their variants, split cleanly, resumable, loadable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessctl.augment import TrajectorySpec, build_trajectories, chat_template_inputs, plan_pairs
from harnessctl.augment.trajectories import CANONICAL, DatasetOutputError

SPEC = dict(n=160, seed=3, variants=12, val_share=0.2, canonical_share=0.3, faults=0.25)


def _rows(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


@pytest.fixture(scope="session")
def hsa_dataset(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "hsa"
    summary = build_trajectories(source, out, TrajectorySpec(**SPEC), jobs=2)
    return out, summary


@pytest.fixture(scope="session")
def fixed_dataset(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "fixed"
    summary = build_trajectories(source, out, TrajectorySpec(**SPEC, fixed_harness=True), jobs=1)
    return out, summary


def test_the_plan_splits_by_case_and_by_variant_and_keeps_the_canonical_share():
    pairs, train_ids, val_ids = plan_pairs(TrajectorySpec(**SPEC))
    train = [p for p in pairs if p.split == "train"]
    val = [p for p in pairs if p.split == "validation"]
    assert len(val) == 32 and len(train) == 128
    assert {p.variant_id for p in val} <= set(val_ids) and not set(train_ids) & set(val_ids)
    assert sum(p.variant_id == CANONICAL for p in train) == round(0.3 * 128)
    assert CANONICAL not in {p.variant_id for p in val}


def test_every_trajectory_passes_and_follows_its_own_variant(hsa_dataset):
    out, summary = hsa_dataset
    assert summary.kept + summary.duplicates + summary.rejected == SPEC["n"]
    assert summary.acceptance_rate >= 0.99
    manifests = {m["variant_id"]: m for m in map(json.loads, (out / "variants.jsonl").read_text().splitlines())}
    for name in ("train.jsonl", "validation.jsonl"):
        for row in _rows(out, name):
            meta = row["meta"]
            assert meta["source"] == "oracle" and meta["score"] >= 0.99 and meta["harness_version"] == "v3"
            tools = json.loads(row["tools"])
            offered = {t["function"]["name"] for t in tools}
            called = [
                tc["function"]["name"]
                for m in row["messages"]
                if m["role"] == "assistant"
                for tc in m.get("tool_calls") or []
            ]
            assert set(called) <= offered  # renamed tools are called by their new names
            for m in row["messages"]:
                for tc in m.get("tool_calls") or []:
                    assert isinstance(tc["function"]["arguments"], str)
                    json.loads(tc["function"]["arguments"])
            if meta["variant_id"] != CANONICAL:
                surface = manifests[meta["variant_id"]]["surface"]
                shown = set(surface["tools"].values()) | {surface["skill_loader"]}
                assert offered == shown
                limit = surface["constraints"]["max_reply_chars"]
                assert len(row["messages"][-1]["content"]) <= limit
                hidden = set(meta["hidden_skills"])
                enum = tools[0]["function"]["parameters"]["properties"]["name"]["enum"]
                assert not {surface["skills"][k] for k in hidden} & set(enum)
                assert len(enum) == len(surface["skills"]) - len(hidden)


def test_no_case_and_no_variant_is_in_both_files_and_rows_are_unique(hsa_dataset):
    out, summary = hsa_dataset
    train, val = _rows(out, "train.jsonl"), _rows(out, "validation.jsonl")
    assert len(train) == summary.train and len(val) == summary.validation
    assert not {r["meta"]["case_id"] for r in train} & {r["meta"]["case_id"] for r in val}
    assert not {r["meta"]["variant_id"] for r in train} & {r["meta"]["variant_id"] for r in val}
    hashes = [r["meta"]["hash"] for r in train + val]
    assert len(hashes) == len(set(hashes))
    canonical = sum(r["meta"]["variant_id"] == CANONICAL for r in train)
    assert canonical == summary.canonical_train and abs(canonical / len(train) - 0.3) < 0.05


def test_the_fixed_harness_baseline_has_the_same_cases_and_size(hsa_dataset, fixed_dataset):
    (hsa, _), (fixed, fsum) = hsa_dataset, fixed_dataset
    ids = lambda d: {r["meta"]["case_id"] for n in ("train.jsonl", "validation.jsonl") for r in _rows(d, n)}  # noqa: E731
    assert ids(fixed) == ids(hsa)
    assert {r["meta"]["variant_id"] for r in _rows(fixed, "train.jsonl")} == {CANONICAL}
    assert fsum.train + fsum.validation == SPEC["n"] and not (fixed / "variants.jsonl").exists()


def test_an_interrupted_build_resumes_to_the_same_bytes(source, hsa_dataset, tmp_path):
    done, _ = hsa_dataset
    out = tmp_path / "resumed"
    shutil.copytree(done, out)
    # A kill mid-write: the last rows lost, one torn line, the ledger behind the data.
    train = (out / "train.jsonl").read_bytes()
    cut = train.rfind(b"\n", 0, len(train) // 2)
    (out / "train.jsonl").write_bytes(train[: cut + 40])
    pairs = (out / "pairs.jsonl").read_text().splitlines(keepends=True)
    (out / "pairs.jsonl").write_text("".join(pairs[: len(pairs) // 3]))
    (out / "summary.json").unlink()
    summary = build_trajectories(source, out, TrajectorySpec(**SPEC), jobs=1)
    assert summary.skipped >= len(pairs) // 3
    for name in ("train.jsonl", "validation.jsonl", "variants.jsonl"):
        assert (out / name).read_bytes() == (done / name).read_bytes(), name
    again = build_trajectories(source, out, TrajectorySpec(**SPEC), jobs=1)
    assert again.skipped == SPEC["n"] and again.train == summary.train


def test_another_spec_is_refused_unless_forced(source, hsa_dataset, tmp_path):
    out = tmp_path / "d"
    shutil.copytree(hsa_dataset[0], out)
    with pytest.raises(DatasetOutputError, match=r"another spec \(canonical_share, n differ\)"):
        build_trajectories(source, out, TrajectorySpec(**{**SPEC, "n": 20, "canonical_share": 0.5}))
    summary = build_trajectories(source, out, TrajectorySpec(**{**SPEC, "n": 20, "canonical_share": 0.5}), force=True)
    assert summary.train + summary.validation + summary.rejected + summary.duplicates == 20


class _SloppyTeacher:
    """The oracle, except that on every third case it makes up a price."""

    name = "sloppy"
    reads_answer_key = True  # built on the oracle, so it plans from the case's answer key

    def for_episode(self, case, harness):
        from harnessctl.sim.oracle import OracleModel

        inner = OracleModel().for_episode(case, harness)
        sloppy = int(case.id.rsplit("-", 1)[-1]) % 3 == 0

        class Policy:
            name = "sloppy"

            def generate(self, messages, tools, settings):
                resp = inner.generate(messages, tools, settings)
                if sloppy and not resp.tool_calls:
                    resp.content = "Only $987.65 today!"
                return resp

        return Policy()


def test_teacher_trajectories_are_kept_only_when_the_scorer_passes_them(source, tmp_path):
    spec = TrajectorySpec(n=45, seed=1, variants=6, teacher="sloppy", faults=0.0)
    summary = build_trajectories(source, tmp_path / "t", spec, model=_SloppyTeacher())
    assert summary.rejected == 15 and summary.acceptance_rate == pytest.approx(30 / 45, abs=1e-3)
    assert summary.rejections == {"hallucinated_number": 15}
    rows = _rows(tmp_path / "t", "train.jsonl") + _rows(tmp_path / "t", "validation.jsonl")
    assert len(rows) == 30 and {r["meta"]["source"] for r in rows} == {"teacher"}
    assert all("987.65" not in r["messages"][-1]["content"] for r in rows)


def test_the_dataset_loads_with_datasets_and_renders_with_the_tiny_models_chat_template(hsa_dataset, tiny_model_path):
    from datasets import load_dataset
    from transformers import AutoTokenizer

    out, summary = hsa_dataset
    ds = load_dataset(
        "json", data_files={"train": str(out / "train.jsonl"), "validation": str(out / "validation.jsonl")}
    )
    assert ds["train"].num_rows == summary.train and ds["validation"].num_rows == summary.validation
    assert set(ds["train"].column_names) == {"messages", "tools", "meta"}
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    for row in [ds["train"][i] for i in range(0, summary.train, 17)]:
        messages, tools = chat_template_inputs(row)
        text = tok.apply_chat_template(messages, tools=tools, tokenize=False)
        for spec in tools:
            assert f" : {spec['function']['name']}(" in text  # each tool listed, description first
        call = next(m for m in messages if m.get("tool_calls"))["tool_calls"][0]["function"]
        assert f'<tool_call>{{"name": "{call["name"]}"' in text
        # TRL passes the row as loaded (tools a JSON string, arguments strings): it renders too.
        raw = tok.apply_chat_template(
            row["messages"], tools=json.loads(row["tools"]), tokenize=False, return_dict=False
        )
        assert raw == text
        enc = tok.apply_chat_template(
            messages, tools=tools, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        assert 0 < sum(enc["assistant_masks"]) < len(enc["input_ids"])


@pytest.mark.filterwarnings("ignore:`gradient_checkpointing` is deprecated:FutureWarning")  # TRL's own default
def test_trls_sft_trainer_consumes_the_rows_without_dropping_any(hsa_dataset, tiny_model_path, tmp_path):
    """Tokenized with assistant-only loss: every row kept, and only assistant tokens are labels."""
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    out, _ = hsa_dataset
    rows = load_dataset("json", data_files=str(out / "validation.jsonl"))["train"].select(range(12))
    config = SFTConfig(
        output_dir=str(tmp_path / "sft"),
        max_steps=1,
        use_cpu=True,
        bf16=False,
        report_to="none",
        assistant_only_loss=True,
        max_length=2048,
        save_strategy="no",
        dataset_num_proc=None,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_model_path),
        args=config,
        train_dataset=rows,
        processing_class=AutoTokenizer.from_pretrained(tiny_model_path),
    )
    tokenized = trainer.train_dataset
    assert tokenized.num_rows == rows.num_rows
    for ex in tokenized:
        labelled = sum(label != -100 for label in ex["labels"])
        assert 0 < labelled < len(ex["input_ids"])


def test_quoted_skills_open_each_skill_load_with_the_catalog_line_of_the_skill_loaded(source, tmp_path):
    out = tmp_path / "quoted"
    summary = build_trajectories(source, out, TrajectorySpec(**{**SPEC, "n": 40}, quote_skills=True), jobs=1)
    assert summary.kept >= 38
    assert json.loads((out / "dataset.json").read_text())["spec"]["quote_skills"] is True
    quoted = 0
    for row in _rows(out, "train.jsonl") + _rows(out, "validation.jsonl"):
        catalog = row["messages"][0]["content"]
        loader = json.loads(row["tools"])[0]["function"]["name"]
        for m in row["messages"]:
            loads = [tc for tc in m.get("tool_calls") or [] if tc["function"]["name"] == loader]
            if not loads:
                assert "<think>" not in (m.get("content") or "")  # only skill loads carry the note
                continue
            note = m["content"]
            assert note.startswith("<think>") and note.endswith("</think>")
            lines = note.removeprefix("<think>").removesuffix("</think>").split("; ")
            names = [json.loads(tc["function"]["arguments"])["name"] for tc in loads]
            for line, name in zip(lines, names, strict=True):
                assert f"- {line}\n" in catalog + "\n"  # the listing's own line, word for word
                assert line.endswith(f" : {name}")  # ending with the name the call then copies
            quoted += 1
    assert quoted >= 38
    with pytest.raises(ValueError, match="quote_skills"):
        TrajectorySpec(quote_skills=True, teacher="openai/x")
