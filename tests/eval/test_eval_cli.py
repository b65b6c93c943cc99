"""The eval command line as a user meets it: options checked like `run`'s, run ids that are names,
hints that repeat the folders in use, `runs`, `--version`, and no silent oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app

REPO = Path(__file__).resolve().parents[2]
EVALS = REPO / "evals"
HARNESS = REPO / "harnesses" / "livecommerce"


def eval_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["eval", "--runs-dir", str(tmp_path / "runs"), "--evals-dir", str(EVALS), "-H", str(HARNESS), *extra]


@pytest.mark.parametrize(
    "args, says",
    [
        (("--temperature", "5"), "--temperature"),
        (("--max-tokens", "0"), "--max-tokens"),
        (("--retries", "-1"), "--retries"),
        (("--max-error-share", "2"), "--max-error-share"),
        (("--case-timeout", "soon"), "not a duration"),
        (("--run-id", "../x"), "a run id is a name"),
        (("--run-id", "a/b"), "a run id is a name"),
        (
            (
                "--api-key-env",
                "HARNESSCTL_TEST_UNSET_KEY",
                "--model",
                "openai/x",
                "--api-base",
                "http://127.0.0.1:9/v1",
            ),
            "HARNESSCTL_TEST_UNSET_KEY",
        ),
    ],
)
def test_eval_refuses_bad_options_like_run_does(tmp_path, args, says):
    res = CliRunner().invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "1", *args))
    assert res.exit_code == 2, res.output
    assert says in res.output and "Traceback" not in res.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "runs").exists()


def test_a_dead_api_base_is_one_message_before_litellm_loads(tmp_path, monkeypatch):
    import socket

    from harnessctl.models import litellm_backend

    def not_needed():
        raise AssertionError("litellm was loaded for an endpoint that refuses connections")

    monkeypatch.setattr(litellm_backend, "import_litellm", not_needed)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    for command in (
        eval_args(tmp_path, "--model", "openai/x", "--api-base", dead, "--limit", "2"),
        ["bench", "latency", "--model", "openai/x", "--api-base", dead, "-H", str(HARNESS), "--evals-dir", str(EVALS)],
    ):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 2, res.output
        said = " ".join(res.stderr.split())
        assert f"openai/x: cannot reach {dead}" in said and "is the server running" in said, command[0]
        assert "Traceback" not in res.output
    assert not (tmp_path / "runs").exists()


def test_a_bad_option_is_the_only_thing_eval_says_before_it_stops(tmp_path):
    # without --model the default model is named on stderr, but only for a run that will start
    res = CliRunner().invoke(app, eval_args(tmp_path, "--suite", "livestrem", "--limit", "1"))
    assert res.exit_code == 2 and "unknown suite 'livestrem'" in res.stderr
    assert "model:" not in res.stderr and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("args", [("--temperature", "5"), ("--max-tokens", "0")])
def test_run_takes_the_same_ranges(livecommerce_path, args):
    res = CliRunner().invoke(app, ["run", "-q", "how much?", "-H", str(livecommerce_path), "--model", "oracle", *args])
    assert res.exit_code == 2 and args[0] in res.output


def test_without_a_model_the_oracle_is_named_and_labelled(tmp_path, monkeypatch):
    from harnessctl.models import registry

    monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)  # no trained default here ...
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", tmp_path / "none")  # ... and none shipped
    res = CliRunner().invoke(app, eval_args(tmp_path, "--suite", "variant", "--limit", "3", "--run-id", "o"))
    assert res.exit_code == 0, res.output
    assert "model: oracle" in res.output and "reference policy (reads the answer key)" in res.output
    data = json.loads(
        CliRunner().invoke(app, eval_args(tmp_path, "--suite", "variant", "--limit", "3", "--json")).stdout
    )
    assert (
        data["reference_policy"] is True and data["model_label"] == "oracle — reference policy (reads the answer key)"
    )
    res = CliRunner().invoke(app, ["report", "o", "--runs-dir", str(tmp_path / "runs")])
    html = (tmp_path / "runs" / "o" / "report.html").read_text()
    assert res.exit_code == 0 and "reference policy (reads the answer key)" in html and "reads each case" in html


def test_hints_repeat_the_runs_folder_in_use(tmp_path):
    res = CliRunner().invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "2", "--run-id", "h"))
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert (
        f"--resume h --runs-dir {tmp_path / 'runs'}" in flat
        and f"harnessctl report h --runs-dir {tmp_path / 'runs'}" in flat
    )


def test_progress_into_a_log_file_is_a_plain_line_per_tenth(tmp_path):
    # under the test runner stderr is not a terminal, as when a job writes to a log file
    res = CliRunner().invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "20", "--run-id", "p"))
    assert res.exit_code == 0, res.output
    counts = [line.split()[1] for line in res.stderr.splitlines() if line.startswith("livestream ") and "/20 (" in line]
    assert counts == [f"{n}/20" for n in range(2, 21, 2)]


def test_resume_keeps_the_runs_own_settings(tmp_path):
    CliRunner().invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "2", "--run-id", "r"))
    res = CliRunner().invoke(
        app,
        ["eval", "--runs-dir", str(tmp_path / "runs"), "--resume", "r", "--model", "openai/other", "--max-tokens", "9"],
    )
    assert res.exit_code == 2 and "drop --model, --max-tokens" in " ".join(res.output.split())


def test_a_damaged_manifest_is_refused_on_resume(tmp_path):
    CliRunner().invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "2", "--run-id", "d"))
    (tmp_path / "runs" / "d" / "manifest.json").write_text("{}")
    res = CliRunner().invoke(app, ["eval", "--resume", "d", "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 2 and "damaged manifest" in res.output and "start a new run" in res.output
    assert "report None" not in res.output


def test_runs_lists_each_run_with_model_suites_scores_and_completeness(tmp_path):
    runner = CliRunner()
    runner.invoke(
        app,
        eval_args(tmp_path, "--model", "oracle", "--suite", "livestream,robustness", "--limit", "2", "--run-id", "one"),
    )
    (tmp_path / "runs" / "broken").mkdir()
    (tmp_path / "runs" / "broken" / "manifest.json").write_text("{not json")
    res = runner.invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["run_id"]: r for r in json.loads(res.stdout)["runs"]}
    one = rows["one"]
    assert one["model"] == "oracle" and one["suites"] == ["livestream", "robustness"] and one["complete"] is True
    assert one["scores"] == {"livestream": 100.0, "robustness": 100.0} and one["errors"] == 0
    assert "not valid JSON" in rows["broken"]["problem"]
    human = runner.invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs")])
    flat = " ".join(human.output.split())
    assert human.exit_code == 0 and "one" in flat and "reference policy" in flat and "unreadable" in flat
    empty = runner.invoke(app, ["runs", "--runs-dir", str(tmp_path / "none")])
    assert empty.exit_code == 0 and "no runs in" in empty.output


def test_runs_shows_a_long_run_id_whole_on_a_narrow_screen(tmp_path):
    # the id is what `compare`, `report` and `--resume` take next: an 80-column table never cuts it
    long_id = "fixed-sft-under-the-weekly-edit-of-week-49"
    runner = CliRunner()
    runner.invoke(
        app,
        eval_args(
            tmp_path, "--model", "oracle", "--suite", "livestream,robustness", "--limit", "1", "--run-id", long_id
        ),
    )
    res = runner.invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 0 and long_id in res.stdout.split()
    # two suites: their overall score has a column, and no number or header is cut to make room
    assert "overall" in res.stdout and "…" not in res.stdout
    assert res.stdout.split()[res.stdout.split().index(long_id) + 2 : res.stdout.split().index(long_id) + 6] == [
        "livestream",
        "100.0",
        "0",
        "yes",
    ]


def test_runs_of_one_suite_each_give_the_overall_columns_room_to_the_rest(tmp_path):
    runner = CliRunner()
    for run_id in ("fixed-sft-under-the-weekly-edit", "hat-under-the-weekly-edit"):
        runner.invoke(app, eval_args(tmp_path, "--model", "oracle", "--limit", "1", "--run-id", run_id))
    res = runner.invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs")], terminal_width=80)
    lines = res.stdout.splitlines()
    assert res.exit_code == 0 and "overall" not in res.stdout and "done" in lines[2].split()
    # each run on one line: id, model, suite with its score, errors, done
    assert [line.split() for line in lines if "weekly-edit" in line] == [
        ["hat-under-the-weekly-edit", "oracle*", "livestream", "100.0", "0", "yes"],
        ["fixed-sft-under-the-weekly-edit", "oracle*", "livestream", "100.0", "0", "yes"],
    ]


def test_version_and_shell_completion():
    from harnessctl import __version__

    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"harnessctl {__version__}"
    helptext = CliRunner().invoke(app, ["--help"]).output
    assert "--install-completion" in helptext and "--show-completion" in helptext


def test_help_text_wraps_at_the_terminal_not_where_the_source_wrapped_it():
    # Typer's rich help keeps a docstring's single line breaks: prose wrapped in the source would
    # break mid-sentence on screen. Every paragraph reaches the terminal as one line.
    import inspect

    from typer.main import get_command

    def commands(group, path):
        for name, cmd in (getattr(group, "commands", None) or {}).items():
            yield f"{path} {name}", cmd
            yield from commands(cmd, f"{path} {name}")

    broken = {
        path: paragraph
        for path, cmd in commands(get_command(app), "harnessctl")
        for paragraph in inspect.cleandoc(cmd.help or "").split("\n\n")
        if "\n" in paragraph and not paragraph.startswith("\b") and "\n- " not in paragraph
    }
    assert broken == {}
    page = CliRunner().invoke(app, ["compare", "--help"], terminal_width=200).output
    assert "exit 2 when the runs used different suites versions (unless --force)." in page
    listing = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert "List the runs in the runs folder, newest first." in listing


def test_the_demo_echoes_commands_quoted_and_honours_no_color(tmp_path):
    import subprocess

    script = (REPO / "scripts" / "demo.sh").read_text()
    start = script.index('if [ -z "${NO_COLOR:-}" ]')
    helper = script[start : script.index("\n}\n", start) + 3]
    run = [*helper.splitlines(), 'step printf "%s|" "two words" "it\'s"']
    for env, coloured in (({"NO_COLOR": "1"}, False), ({}, False)):  # captured output is no terminal either
        res = subprocess.run(
            ["bash", "-c", "\n".join(run)],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", **env},
            check=False,
        )
        assert res.returncode == 0, res.stderr
        assert ("\x1b[" in res.stdout) is coloured
        assert "$ printf %s\\| two\\ words it\\'s" in res.stdout and "two words|it's|" in res.stdout


def test_hints_repeat_the_evals_folder_in_use(tmp_path):
    (tmp_path / "myevals").mkdir()
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            "oracle",
            "--evals-dir",
            str(tmp_path / "myevals"),
            "-H",
            str(HARNESS),
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
    )
    assert res.exit_code == 2
    assert f"harnessctl eval build-suites --evals-dir {tmp_path / 'myevals'}" in " ".join(res.output.split())
    res = CliRunner().invoke(app, ["report", "nope", "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 2 and f"harnessctl runs --runs-dir {tmp_path / 'runs'}" in " ".join(res.output.split())


def test_judge_calibrate_warns_when_the_labels_were_made_by_a_program(tmp_path, monkeypatch):
    from harnessctl.eval import calibrate as calibrate_mod

    class Stop(Exception):
        pass

    def stop(*a, **k):
        raise Stop  # the warning comes before any judge call; no judge model is needed to see it

    monkeypatch.setattr(calibrate_mod, "calibrate", stop)
    res = CliRunner().invoke(
        app,
        [
            "judge",
            "calibrate",
            "--labels",
            str(EVALS / "labels.jsonl"),
            "--judge",
            "openai/judge",
            "--api-base",
            "http://127.0.0.1:9/v1",
        ],
    )
    assert isinstance(res.exception, Stop)
    flat = " ".join(res.output.split())
    assert "labels in" in flat and "were made by a program, not a person" in flat


@pytest.mark.parametrize(
    "env, says", [(None, "no --model, no $HARNESSCTL_MODEL"), ("oracle", "from $HARNESSCTL_MODEL")]
)
def test_run_says_which_model_it_uses_and_where_it_came_from(livecommerce_path, tmp_path, monkeypatch, env, says):
    from harnessctl.models import registry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", tmp_path / "none")  # no model shipped either
    if env is None:
        monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    else:
        monkeypatch.setenv("HARNESSCTL_MODEL", env)
    res = CliRunner().invoke(
        app, ["run", "-q", "how much is it?", "-p", "P003", "-H", str(livecommerce_path), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert says in " ".join(res.stderr.split()) and "reference policy" in res.stderr
    assert json.loads(res.stdout)["record"]["model"] == "oracle"  # stdout stays one JSON object
