"""`harnessctl model init` and `harnessctl serve`, driven through the real CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app

runner = CliRunner()
SMALL = ["--conversations", "20", "--hidden", "32", "--intermediate", "64", "--layers", "1", "--heads", "2"]


def test_model_init_builds_a_loadable_model_and_reports_it(tmp_path, livecommerce_path):
    target = tmp_path / "tiny"
    result = runner.invoke(
        app, ["model", "init", "--out", str(target), "-H", str(livecommerce_path), "--seed", "3", *SMALL, "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["path"] == str(target)
    assert 0 < report["parameters"] < 1_000_000
    assert report["config"]["seed"] == 3 and report["config"]["hidden_size"] == 32
    assert report["corpus_conversations"] == 20 and report["seconds"]["total"] > 0
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert AutoTokenizer.from_pretrained(target, local_files_only=True).chat_template
    assert AutoModelForCausalLM.from_pretrained(target, local_files_only=True).num_parameters() == report["parameters"]


def test_model_init_refuses_to_overwrite_without_force(tmp_path, livecommerce_path):
    target = tmp_path / "tiny"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    result = runner.invoke(app, ["model", "init", "--out", str(target), "-H", str(livecommerce_path), *SMALL])
    assert result.exit_code == 2
    assert "already exists" in result.output and "--force" in result.output
    assert (target / "keep.txt").read_text() == "mine"


def test_model_init_rejects_a_bad_shape_with_the_fix(tmp_path, livecommerce_path):
    result = runner.invoke(
        app,
        ["model", "init", "--out", str(tmp_path / "x"), "-H", str(livecommerce_path), "--hidden", "30", "--heads", "4"],
    )
    assert result.exit_code == 2
    assert "multiple of num_heads" in result.output
    assert "Traceback" not in result.output


def test_model_init_into_a_folder_it_cannot_write_names_that_folder(livecommerce_path):
    # /proc takes no new folders, even as root; the model is staged beside --out, but the message
    # names --out, the folder the user asked for
    target = Path("/proc/harnessctl-tiny")
    result = runner.invoke(app, ["model", "init", "--out", str(target), "-H", str(livecommerce_path), *SMALL])
    assert result.exit_code == 2, result.output
    assert f"{target}: cannot write the model there" in result.output
    assert ".harnessctl-tiny-" not in result.output and "Traceback" not in result.output


def test_serve_a_missing_model_folder_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["serve", f"local:{tmp_path / 'nope'}", "--port", "0"])
    assert result.exit_code == 2
    assert "no such model folder" in result.output and "model init" in result.output


@pytest.mark.parametrize("where, says", [("nope", "does not exist"), ("file.txt", "is not a folder")])
def test_serve_a_path_that_is_no_model_folder_names_the_path(tmp_path, where, says):
    (tmp_path / "file.txt").write_text("x")
    result = runner.invoke(app, ["serve", str(tmp_path / where), "--port", "0"])
    assert result.exit_code == 2
    assert says in result.output and "model init" in result.output
    assert "litellm" not in result.output and "Traceback" not in result.output


def test_serve_needs_the_key_variable_it_names(tiny_model_path):
    result = runner.invoke(app, ["serve", str(tiny_model_path), "--api-key-env", "SURELY_NOT_SET_KEY"])
    assert result.exit_code == 2
    assert "SURELY_NOT_SET_KEY is not set" in result.output


@pytest.mark.slow
def test_serve_runs_the_embedded_server_until_interrupted(tiny_model_path, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", "PYTHONFAULTHANDLER": "1"}
    # stderr goes to a file: a pipe nobody reads until the end can fill up and block the server
    stderr = tmp_path / "serve.stderr"
    argv = ["harnessctl", "serve", str(tiny_model_path), "--port", "0", "--name", "tiny"]
    # Ctrl-C as in a terminal, even where the tests run with SIGINT ignored (a background job:
    # its children inherit that, and Python then installs no KeyboardInterrupt handler)
    start = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        f"sys.argv = {argv!r}; runpy.run_module('harnessctl.cli.main', run_name='__main__')"
    )
    with stderr.open("w") as stderr_file:
        proc = subprocess.Popen(
            [sys.executable, "-c", start],
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            text=True,
            env=env,
        )
    try:
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if " at http://" in line:
                url = line.split(" at ", 1)[1].split()[0]
        assert url, stderr.read_text()
        with urllib.request.urlopen(url + "/models", timeout=10) as r:
            assert [m["id"] for m in json.loads(r.read())["data"]] == ["tiny"]
        body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).encode()
        req = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.loads(r.read())
        assert answer["choices"][0]["message"]["role"] == "assistant"
        assert answer["usage"]["completion_tokens"] >= 1
        # it streams: the latency bench measures time to first token and decode speed against it
        from tests.conftest import LIVECOMMERCE, REPO_ROOT

        bench = runner.invoke(
            app,
            [
                "bench",
                "latency",
                "--model",
                "openai/tiny",
                "--api-base",
                url,
                "-c",
                "1",
                "-n",
                "2",
                "--max-tokens",
                "8",
                "--temperature",  # seeded sampling: the untrained model's greedy text can be only whitespace
                "1",
                "--seed",
                "0",
                "-H",
                str(LIVECOMMERCE),
                "--evals-dir",
                str(REPO_ROOT / "evals"),
                "--json",
            ],
        )
        assert bench.exit_code == 0, bench.output
        [level] = json.loads(bench.stdout)["levels"]
        assert (
            level["streamed"]
            and level["errors"] == 0
            and 0 < level["ttft_p50"] <= level["p50"]
            and level["tokens_per_s"] > 0
        )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # the fault handler writes every thread's stack to stderr
            proc.wait(timeout=20)
            pytest.fail(f"serve did not stop on Ctrl-C; its threads:\n{stderr.read_text()[-6000:]}")
    assert proc.returncode == 0


def test_serve_execs_vllm_with_the_hermes_parser_when_it_can_run(tiny_model_path, monkeypatch):
    from harnessctl.models import server

    launched = {}
    monkeypatch.setattr(server, "vllm_available", lambda: True)
    monkeypatch.setattr(server, "exec_vllm", lambda spec, **kw: launched.update(spec=spec, **kw))
    monkeypatch.setenv("SERVE_KEY", "sk-serve")
    result = runner.invoke(
        app, ["serve", str(tiny_model_path), "--port", "8011", "--name", "tiny", "--api-key-env", "SERVE_KEY"]
    )
    assert result.exit_code == 0, result.output
    assert launched == {
        "spec": f"local:{tiny_model_path}",
        "host": "127.0.0.1",
        "port": 8011,
        "served_name": "tiny",
        "api_key": "sk-serve",
    }
    cmd = server.vllm_command(launched["spec"], host="127.0.0.1", port=8011, served_name="tiny")
    assert cmd[:3] == ["vllm", "serve", str(tiny_model_path)]
    assert "--enable-auto-tool-choice" in cmd and cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
    assert "sk-serve" not in " ".join(cmd)  # the key travels in VLLM_API_KEY, never on the command line


def test_serve_refuses_the_oracle():
    result = runner.invoke(app, ["serve", "oracle"])
    assert result.exit_code == 2 and "cannot be served" in result.output
