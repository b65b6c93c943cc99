"""The committed suites: big enough, rebuilt byte for byte, scored by key under any harness —
the oracle aces them and an untrained model gets nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.eval.build import build_all
from harnessctl.eval.perturb import KINDS, perturb
from harnessctl.eval.runner import EvalConfig, HarnessResolver, run_eval
from harnessctl.eval.suites import AGENT_SUITES, SUITES, file_sha256, load_suite, sample, suite_index
from harnessctl.harness.render import render_harness

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"
HARNESS = REPO / "harnesses" / "livecommerce"
MINIMUM = {"livestream": 1000, "variant": 1500, "robustness": 1000, "ifeval": 1000}


@pytest.fixture(scope="module")
def suites():
    return {s: load_suite(s, EVALS) for s in SUITES}


def test_the_suites_are_big_enough_and_ids_are_unique(suites):
    for name, items in suites.items():
        assert len(items) >= MINIMUM[name], name
        assert len({i.id for i in items}) == len(items)
    assert sum(len(v) for v in suites.values()) > 4500


def test_build_suites_rewrites_the_committed_files_byte_for_byte(tmp_path):
    index = build_all(tmp_path, harness_path=HARNESS)
    committed = suite_index(EVALS)["suites"]
    for name in SUITES:
        assert (
            file_sha256(tmp_path / f"{name}.jsonl") == file_sha256(EVALS / f"{name}.jsonl") == committed[name]["sha256"]
        ), name
        assert index["suites"][name]["n"] == committed[name]["n"]
    # ...and the variant suite's frozen variants beside them
    frozen = sorted(p.name for p in (EVALS / "variants").glob("*.json"))
    assert len(frozen) == 40 and sorted(p.name for p in (tmp_path / "variants").glob("*.json")) == frozen
    for name in frozen:
        assert file_sha256(tmp_path / "variants" / name) == file_sha256(EVALS / "variants" / name), name


def test_variant_cases_carry_the_spec_that_regenerates_their_harness(suites):
    items = suites["variant"]
    hsa = [i for i in items if (i.harness or {}).get("kind") == "variant"]
    history = [i for i in items if (i.harness or {}).get("kind") == "rev"]
    assert len(hsa) >= 1300 and len(history) >= 150
    assert {i.harness["rev"] for i in history} == {"v1", "v2"}
    spec = hsa[0].harness
    assert spec["split"] == "heldout" and isinstance(spec["seed"], int) and spec["ops"]
    # Every held-out variant binds its reply constraints near the floor the task allows.
    assert all(60 <= i.harness["bind"]["max_reply_chars"] <= 70 and i.harness["bind"]["max_emojis"] == 0 for i in hsa)
    families = {f for i in hsa for f in i.families}
    assert families == {"op:skills", "op:skill_content", "op:tools", "op:prompt", "op:hooks"}
    # Regenerated twice from the spec: the same harness; and not the shipped one.
    a, b = HarnessResolver(HARNESS), HarnessResolver(HARNESS)
    tools_spec = next(i.harness for i in hsa if i.harness["ops"] == ["tools"])
    ra, rb = render_harness(a.get(tools_spec)), render_harness(b.get(tools_spec))
    assert (ra.system_prompt, ra.tools) == (rb.system_prompt, rb.tools)
    shipped = render_harness(a.get(None))
    assert sorted(ra.tool_key_by_name) != sorted(shipped.tool_key_by_name)  # tools were renamed
    assert sorted(ra.tool_key_by_name.values()) == sorted(shipped.tool_key_by_name.values())  # same keys


def test_every_case_expects_elements_its_harness_has(suites):
    resolver = HarnessResolver(HARNESS)
    for name in AGENT_SUITES:
        for item in sample(suites[name], 150):
            h = resolver.get(item.harness)
            skills, tools = {s.key for s in h.skills}, {t.key for t in h.tools}
            exp = item.case.expect
            assert exp.skill is None or exp.skill in skills or item.harness, (name, item.id)
            assert all(c.tool in tools for c in exp.calls), (name, item.id)


def test_robustness_covers_every_fault_and_perturbation(suites):
    families = {f for i in suites["robustness"] for f in i.families}
    for kind in ("error", "timeout", "malformed", "partial", "empty", "persistent"):
        assert f"fault:{kind}" in families
    for kind in KINDS:
        assert f"perturb:{kind}" in families
    faulted = [i for i in suites["robustness"] if i.case.faults]
    assert all(set(i.case.faults) <= {c.tool for c in i.case.expect.calls} for i in faulted)


def test_perturbations_keep_what_the_answer_depends_on(suites):
    for item in sample(suites["livestream"], 60):
        case = item.case
        for kind in KINDS:
            p = perturb(case, kind, seed=5)
            assert p.expect == case.expect and p == perturb(case, kind, seed=5)
            for token in [str(v) for v in (case.slots or {}).values() if isinstance(v, str)]:
                if token.lower() in case.query.lower():
                    assert token.lower() in p.query.lower(), (kind, token, p.query)
            if case.context.product_name and case.context.product_name in case.query:
                assert case.context.product_name in p.query


def test_the_oracle_aces_a_deterministic_sample_of_every_agent_suite(tmp_path):
    outcome = run_eval(
        EvalConfig(
            suites=list(AGENT_SUITES),
            model="oracle",
            limit=200,
            jobs=8,
            evals_dir=str(EVALS),
            runs_dir=str(tmp_path),
            harness_path=str(HARNESS),
        )
    )
    for name in AGENT_SUITES:
        s = outcome.summary["suites"][name]
        assert s["n"] == 200 and s["errors"] == 0
        assert s["score"] >= 99.0, (name, s["failures"])


def test_an_untrained_model_runs_through_every_suite_and_gets_nowhere(tmp_path, tiny_model_path):
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--suite",
            "all",
            "--model",
            f"local:{tiny_model_path}",
            "--limit",
            "2",
            "--max-tokens",
            "24",
            "-j",
            "2",
            "--no-cache",
            "--json",
            "--runs-dir",
            str(tmp_path),
            "--evals-dir",
            str(EVALS),
            "-H",
            str(HARNESS),
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert set(data["suites"]) == set(SUITES)
    for name, s in data["suites"].items():
        assert s["n"] == 2 and s["errors"] == 0, name
    for name in AGENT_SUITES:
        s = data["suites"][name]
        assert s["pass_rate"] == 0.0 and s["components"]["correctness"] == 0.0, name  # not one case right
        # Conduct (short, compliant, cheap) earns nothing when nothing of the task was done;
        # a case that needs no tool can still credit "no wrong call" a little.
        assert s["score"] < 20.0, name
    # Random text can satisfy an instruction such as "no commas" by chance, never all of them.
    assert data["suites"]["ifeval"]["ifeval"]["instruction_strict"] < 100.0


def test_build_suites_cli_can_use_official_ifeval_prompts(tmp_path):
    official = tmp_path / "input_data.jsonl"
    official.write_text(
        "".join(
            json.dumps(
                {
                    "key": k,
                    "prompt": f"Write note {k}. Do not use any commas.",
                    "instruction_id_list": ["punctuation:no_comma"],
                    "kwargs": [{}],
                }
            )
            + "\n"
            for k in range(3)
        )
    )
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "build-suites",
            "--suite",
            "ifeval",
            "--ifeval-prompts",
            str(official),
            "--evals-dir",
            str(tmp_path / "e"),
            "-H",
            str(HARNESS),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)["suites"]["ifeval"]
    assert info["n"] == 3 and info["source"] == "official IFEval prompts"
    assert [i.id for i in load_suite("ifeval", tmp_path / "e")] == [
        "ifeval-official-0",
        "ifeval-official-1",
        "ifeval-official-2",
    ]


def test_a_control_worded_from_the_training_templates_holds_the_same_cases_and_is_never_compared(tmp_path):
    """`build-suites --messages train`: the livestream cases again, each viewer message drawn from
    the training side's templates instead of the held-out side's, marked in the index; a run on it
    and a run on the real suite are not compared (their case ids match, their messages do not),
    and the control is never written over the real suites."""
    from harnessctl.sim.templates import template_split

    control = tmp_path / "evals-train"
    cmd = ["eval", "build-suites", "-s", "livestream", "--messages", "train", "-H", str(HARNESS), "--json"]
    res = CliRunner().invoke(app, [*cmd, "--evals-dir", str(control)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["suites"]["livestream"]["messages"] == "train"
    real, trained = load_suite("livestream", EVALS), load_suite("livestream", control)
    assert [i.id for i in real] == [i.id for i in trained]
    assert [i.case.intent for i in real] == [i.case.intent for i in trained]

    def side(item):
        kind, _, _ = item.case.template.partition(":")
        from harnessctl.sim.templates import TEMPLATES, template_id

        text = next(t for t in TEMPLATES[kind] if template_id(kind, t) == item.case.template)
        return template_split(kind, text)

    assert {side(i) for i in real[:200]} == {"eval"} and {side(i) for i in trained[:200]} == {"train"}
    assert sum(a.case.query != b.case.query for a, b in zip(real, trained, strict=True)) > 0.9 * len(real)
    assert "messages" not in suite_index(EVALS)["suites"]["livestream"]  # the real suites say nothing

    runs = tmp_path / "runs"
    for run_id, evals in (("real", EVALS), ("control", control)):
        res = CliRunner().invoke(
            app,
            ["eval", "-s", "livestream", "--limit", "4", "-m", "oracle", "-H", str(HARNESS)]
            + ["--evals-dir", str(evals), "--runs-dir", str(runs), "--run-id", run_id],
        )
        assert res.exit_code == 0, res.output
        assert ("livestream is a control: its viewer messages are worded from the train templates" in res.output) is (
            run_id == "control"
        ), res.output
    res = CliRunner().invoke(app, ["compare", "real", "control", "--runs-dir", str(runs)])
    assert res.exit_code == 2 and "run B from the train ones" in " ".join(res.output.split()), res.output

    res = CliRunner().invoke(app, cmd)  # no --evals-dir: the real suites
    assert res.exit_code == 2 and "write them to a folder of their own (--evals-dir evals-train)" in res.output
