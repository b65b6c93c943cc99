"""The judge: it sees the whole episode, its verdicts parse whatever a model writes, pairwise
mode catches position bias, and calibration measures it against labels — all with stub judges,
never the network."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.eval.calibrate import calibrate, pairs_from_labels
from harnessctl.eval.judge import RUBRIC, Judge, parse_verdict, parse_winner, render_episode, verdict_messages
from harnessctl.eval.labels import Label, LabelError, append_label, read_labels
from harnessctl.models.scripted import ScriptedModel

EPISODE = {
    "messages": [
        {"role": "system", "content": "SYSTEM PROMPT TEXT"},
        {"role": "user", "content": "how much is the glow serum?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "product_card", "arguments": '{"product_id": "P001"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"name": "Glow Serum", "live_price": "$19.90"}'},
    ],
    "tool_steps": [{"name": "product_card", "key": "product_details", "ok": True, "error": None}],
    "reply": "The Glow Serum is $19.90 in the live room!",
    "constraints": {"max_reply_chars": 120},
}


def test_the_judge_sees_tool_results_and_reply_but_not_the_system_prompt():
    text = render_episode(EPISODE)
    assert "Viewer: how much is the glow serum?" in text
    assert 'Assistant calls product_card({"product_id": "P001"})' in text
    assert '"live_price": "$19.90"' in text and "Final reply (42 chars): The Glow Serum is $19.90" in text
    assert "max_reply_chars=120" in text and "SYSTEM PROMPT TEXT" not in text
    prompt = verdict_messages(EPISODE)[1]["content"]
    assert all(c.key in prompt for c in RUBRIC)


@pytest.mark.parametrize(
    ("text", "passed", "criteria"),
    [
        (
            '{"verdict": "pass", "criteria": {"grounded": true, "answers": true}}',
            True,
            {"grounded": True, "answers": True},
        ),
        ('<think>the price matches</think>\n```json\n{"verdict": "PASS"}\n```', True, {}),
        ("Here is my review: {'verdict': 'fail', 'criteria': {'grounded': False,},}", False, {"grounded": False}),
        (
            '{"criteria": [{"key": "grounded", "pass": true}, {"key": "stream_fit", "pass": "no"}]}',
            False,
            {"grounded": True, "stream_fit": False},
        ),
        (
            '{"grounded": "yes", "answers": "yes", "compliant": "yes", "stream_fit": "yes"}',
            True,
            {"grounded": True, "answers": True, "compliant": True, "stream_fit": True},
        ),
        ("Verdict: fail. The price is not in any tool result.", False, {}),
        # A pass that contradicts a failed criterion is a fail.
        (
            '{"verdict": "pass", "criteria": {"compliant": {"pass": false, "reason": "says it cures acne"}}}',
            False,
            {"compliant": False},
        ),
    ],
)
def test_verdicts_parse_from_what_judges_actually_write(text, passed, criteria):
    v = parse_verdict(text)
    assert v.passed is passed and v.criteria == criteria and v.parse_error is None


def test_a_judge_that_says_nothing_usable_fails_the_episode_and_says_why():
    v = parse_verdict("I am not sure what you want me to do.")
    assert v.passed is False and v.parse_error


def test_winner_parsing():
    assert parse_winner('{"winner": "B", "reason": "grounded"}') == ("B", "grounded")
    assert parse_winner("winner: tie") == ("tie", "")
    assert parse_winner("no idea") == ("", "")


def rule_judge():
    """A stub judge model that applies one rubric rule: a reply quoting $99 is not grounded.
    In pairwise mode it prefers the episode without $99."""

    def answer(messages, tools):
        prompt = messages[-1]["content"]
        if "Episode A:" in prompt:
            a = prompt.split("Episode A:")[1].split("Episode B:")[0]
            return json.dumps({"winner": "B" if "$99" in a else "A", "reason": "the other one invents a price"})
        reply = re.search(r"Final reply \(\d+ chars\): (.*)", prompt).group(1)
        bad = "$99" in reply
        return json.dumps(
            {"criteria": {"grounded": {"pass": not bad, "reason": "price check"}}, "verdict": "fail" if bad else "pass"}
        )

    return ScriptedModel([answer], name="stub-judge", repeat_last=True)


def always_a():
    return ScriptedModel(['{"winner": "A", "reason": "first is better"}'], name="biased", repeat_last=True)


def labels_set(n_cases: int = 12) -> list[Label]:
    labels = []
    for i in range(n_cases):
        good = dict(EPISODE, reply="It is $19.90 live!")
        bad = dict(EPISODE, reply="It is $99 today only!")
        labels.append(
            Label(
                id=f"g{i}", label="pass", reason="grounded", group=f"case{i}", episode=good, criteria={"grounded": True}
            )
        )
        labels.append(
            Label(
                id=f"b{i}",
                label="fail",
                reason="invented price",
                group=f"case{i}",
                episode=bad,
                criteria={"grounded": False},
            )
        )
    # One label the stub judge gets wrong: a labelled fail it cannot see (too long for the overlay).
    labels.append(
        Label(id="long", label="fail", reason="too long", group="long", episode=dict(EPISODE, reply="x" * 300))
    )
    return labels


def test_pairwise_mode_swaps_positions_and_catches_a_biased_judge():
    good, bad = dict(EPISODE, reply="It is $19.90"), dict(EPISODE, reply="It is $99")
    fair = Judge(rule_judge()).compare(good, bad)
    assert (fair.winner, fair.order_ab, fair.order_ba, fair.consistent) == ("first", "A", "B", True)
    biased = Judge(always_a()).compare(good, bad)
    assert biased.consistent is False and biased.winner == "inconsistent"


def test_calibration_reports_agreement_kappa_rates_and_swap_consistency():
    labels = labels_set()
    rep = calibrate(labels, Judge(rule_judge()), n_resamples=200)
    assert (rep.n, rep.n_pass_labels, rep.n_fail_labels) == (25, 12, 13)
    assert rep.agreement.value == pytest.approx(24 / 25)
    assert rep.tpr.value == 1.0 and rep.tnr.value == pytest.approx(12 / 13)
    assert 0.9 < rep.kappa.value < 1.0 and rep.kappa.low <= rep.kappa.value <= rep.kappa.high
    assert rep.confusion == {"pass/pass": 12, "pass/fail": 0, "fail/pass": 1, "fail/fail": 12}
    assert rep.n_pairs == 12 and rep.swap_consistency.value == 1.0 and rep.pairwise_accuracy.value == 1.0
    assert rep.criteria_agreement["grounded"].value == 1.0
    assert [d["id"] for d in rep.disagreements] == ["long"]
    biased = calibrate(
        labels, Judge(ScriptedModel(['{"verdict": "pass", "winner": "A"}'], repeat_last=True)), n_resamples=200
    )
    assert biased.tnr.value == 0.0 and biased.kappa.value == 0.0 and biased.swap_consistency.value == 0.0


def test_pairs_come_from_the_same_case_with_different_labels():
    pairs = pairs_from_labels(labels_set(3))
    assert [(a.id, b.id) for a, b in pairs] == [("g0", "b0"), ("g1", "b1"), ("g2", "b2")]


def test_labels_files_round_trip_and_bad_lines_name_file_line_and_field(tmp_path):
    path = tmp_path / "labels.jsonl"
    for lab in labels_set(2):
        append_label(path, lab)
    assert [lab.id for lab in read_labels(path)] == ["g0", "b0", "g1", "b1", "long"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "label": "maybe"}\n')
    with pytest.raises(LabelError, match=r'bad.jsonl:1: field \'label\' must be "pass" or "fail"'):
        read_labels(bad)


def test_judge_calibrate_cli_against_a_served_stub_judge(tmp_path):
    """The real command, the real litellm path, a stub judge on loopback."""
    from harnessctl.models.server import serve_in_background

    labels = tmp_path / "labels.jsonl"
    for lab in labels_set(6):
        append_label(labels, lab)
    url, stop = serve_in_background(rule_judge(), model_name="judge")
    try:
        res = CliRunner().invoke(
            app,
            [
                "judge",
                "calibrate",
                "--labels",
                str(labels),
                "--judge",
                "openai/judge",
                "--api-base",
                url,
                "--json",
                "-j",
                "4",
            ],
        )
    finally:
        stop()
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["n"] == 13 and rep["agreement"]["value"] == pytest.approx(12 / 13)
    assert rep["swap_consistency"]["value"] == 1.0 and rep["n_pairs"] == 6
    assert rep["agreement"]["low"] <= rep["agreement"]["value"] <= rep["agreement"]["high"]


def test_judge_calibrate_cli_explains_missing_inputs(tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "judge",
            "calibrate",
            "--labels",
            str(tmp_path / "none.jsonl"),
            "--judge",
            "openai/x",
            "--api-base",
            "http://127.0.0.1:9/v1",
        ],
    )
    assert res.exit_code == 2 and "no such labels file" in res.output
    res = CliRunner(env={"HARNESSCTL_JUDGE": ""}).invoke(
        app, ["judge", "calibrate", "--labels", str(tmp_path / "none.jsonl")]
    )
    assert res.exit_code == 2 and "--judge MODEL" in res.output


def test_the_shipped_calibration_set_is_real_labelled_and_has_both_classes(repo_root):
    from harnessctl.eval.labelset import rubric_label

    labels = read_labels(repo_root / "evals" / "labels.jsonl")
    assert len(labels) >= 100
    assert {lab.label for lab in labels} == {"pass", "fail"}
    assert all(lab.reason and lab.labeler and lab.source and lab.episode.get("reply") is not None for lab in labels)
    assert len(pairs_from_labels(labels)) >= 50
    # Each label is what the rubric rules say about its episode (no hand-edited outliers).
    for lab in labels[:40]:
        assert rubric_label(lab.episode)[1]["stream_fit"] == lab.criteria["stream_fit"]
        assert rubric_label(lab.episode)[1]["grounded"] == lab.criteria["grounded"]


def three_episode_run(runs_dir, repo_root) -> None:
    """A run ``r`` of three livestream episodes (the oracle's) in ``runs_dir``, to label."""
    from harnessctl.eval.runner import EvalConfig, run_eval

    run_eval(
        EvalConfig(
            suites=["livestream"],
            model="oracle",
            limit=3,
            evals_dir=str(repo_root / "evals"),
            runs_dir=str(runs_dir),
            harness_path=str(repo_root / "harnesses" / "livecommerce"),
        ),
        run_id="r",
    )


def test_labelling_in_the_terminal_saves_each_answer_and_resumes(tmp_path, repo_root):
    three_episode_run(tmp_path, repo_root)
    out = tmp_path / "labels.jsonl"
    args = ["judge", "label", "r", "--runs-dir", str(tmp_path), "--out", str(out), "--labeler", "ana"]
    res = CliRunner().invoke(app, args, input="p\nright price, short\nq\n")
    assert res.exit_code == 0, res.output
    first = read_labels(out)
    assert [(lab.label, lab.reason, lab.labeler) for lab in first] == [("pass", "right price, short", "ana")]
    assert first[0].episode["reply"] and not any(m["role"] == "system" for m in first[0].episode["messages"])
    res = CliRunner().invoke(app, args, input="f\ntoo long\np\n\n")  # resumes at the second episode
    assert res.exit_code == 0, res.output
    labels = read_labels(out)
    assert [lab.label for lab in labels] == ["pass", "fail", "pass"] and len({lab.id for lab in labels}) == 3
    res = CliRunner().invoke(app, args, input="")
    assert "nothing left to label" in res.output


def test_labelling_stops_cleanly_when_piped_answers_run_out(tmp_path, repo_root):
    three_episode_run(tmp_path, repo_root)
    out = tmp_path / "labels.jsonl"
    args = ["judge", "label", "r", "--runs-dir", str(tmp_path), "--out", str(out)]
    res = CliRunner().invoke(app, args, input="p\nfine\n")  # one answer for three episodes
    assert res.exit_code == 0, res.output
    assert "Aborted" not in res.output and "Traceback" not in res.output
    assert "1 labels written" in res.output
    assert "the input ended with 2 episodes left; run the same command to continue" in res.stderr
    assert [lab.label for lab in read_labels(out)] == ["pass"]
    res = CliRunner().invoke(app, args, input="f\nslow\n")  # the next run starts at the second
    assert [lab.label for lab in read_labels(out)] == ["pass", "fail"]
    assert "with 1 episode left" in res.stderr


def test_the_calibration_set_is_rebuilt_byte_for_byte(tmp_path, repo_root):
    from harnessctl.eval.labelset import main

    out = tmp_path / "labels.jsonl"
    main(
        [
            "--write",
            str(out),
            "--evals-dir",
            str(repo_root / "evals"),
            "--harness",
            str(repo_root / "harnesses" / "livecommerce"),
        ]
    )
    assert out.read_bytes() == (repo_root / "evals" / "labels.jsonl").read_bytes()
