"""The whole served path: the runtime calls a model through litellm, the embedded server answers.

And `harnessctl run`, the one live turn a person asks for, through the real CLI.
"""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.models.base import GenerationSettings
from harnessctl.models.litellm_backend import LiteLLMModel
from harnessctl.models.server import serve_in_background
from harnessctl.runtime import Termination, run_episode
from harnessctl.sim import OracleModel, case_from_query, generate_cases, load_catalog, score_episode

runner = CliRunner()


def test_a_model_built_by_model_init_serves_the_runtime_through_litellm(tiny_model_path, livecommerce):
    from harnessctl.models.local import LocalModel

    url, stop = serve_in_background(LocalModel(f"local:{tiny_model_path}"), model_name="tiny")
    try:
        model = LiteLLMModel("openai/tiny", api_base=url)
        case = generate_cases(1, seed=4)[0]
        record = run_episode(livecommerce, case, model, settings=GenerationSettings(max_tokens=12))
    finally:
        stop()
    # Untrained, it writes junk: the loop must still complete and record every model turn.
    assert record.model == "openai/tiny"
    assert record.termination in (Termination.REPLY, Termination.MAX_TURNS, Termination.MAX_TOOL_CALLS)
    assert record.model_steps and all(s.error is None for s in record.model_steps)
    assert all(s.prompt_tokens > 500 and 1 <= s.completion_tokens <= 12 for s in record.model_steps)
    assert record.messages[0]["role"] == "system" and record.tools == [
        t for t in record.tools if t["type"] == "function"
    ]
    breakdown = score_episode(record, case)
    assert 0.0 <= breakdown.total < 1.0


@pytest.mark.parametrize("seed", [1, 2])
def test_the_served_path_loses_nothing_a_perfect_agent_needs(livecommerce, seed):
    # The oracle bound to a case, behind HTTP: every decision is read off the messages it gets,
    # so a perfect score proves tool-call ids, names, arguments and results survive the trip.
    for case in generate_cases(6, seed=seed, faults=0.3):
        policy = OracleModel().for_episode(case, livecommerce)
        url, stop = serve_in_background(policy, model_name="oracle-policy")
        try:
            record = run_episode(livecommerce, case, LiteLLMModel("openai/oracle-policy", api_base=url))
        finally:
            stop()
        assert record.termination == Termination.REPLY, case.id
        assert score_episode(record, case).total == pytest.approx(1.0), (case.id, score_episode(record, case).failures)


def test_a_server_returning_500s_is_recorded_not_raised(livecommerce):
    class Broken:
        name = "broken"

        def for_episode(self, case, harness):
            return self

        def generate(self, messages, tools, settings):
            from harnessctl.models.base import ModelError

            raise ModelError("out of memory")

    url, stop = serve_in_background(Broken(), model_name="broken")
    try:
        case = case_from_query("how much?", "P001", load_catalog())
        record = run_episode(
            livecommerce, case, LiteLLMModel("openai/broken", api_base=url, max_retries=1, backoff_s=0.01)
        )
    finally:
        stop()
    assert record.termination == Termination.MODEL_ERROR
    assert "500" in record.model_steps[-1].error and "out of memory" in record.model_steps[-1].error


# -- harnessctl run ------------------------------------------------------------------------


def test_run_with_the_oracle_prints_record_and_score_as_json(livecommerce_path):
    result = runner.invoke(
        app,
        [
            "run",
            "--query",
            "how much is the one on screen?",
            "--product",
            "P001",
            "--model",
            "oracle",
            "-H",
            str(livecommerce_path),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {"case", "record", "score"}
    assert payload["case"]["context"]["product_id"] == "P001" and payload["case"]["intent"] == "price"
    assert payload["record"]["skills_loaded"] == ["price_promo"]
    assert [s["key"] for s in payload["record"]["tool_steps"]][0] == "load_skill"
    assert "$" in payload["record"]["reply"]
    assert payload["score"]["total"] == pytest.approx(1.0)


def test_run_shows_skill_calls_reply_score_and_latency(livecommerce_path):
    result = runner.invoke(
        app,
        ["run", "-q", "is M still in stock?", "-p", "P021", "-m", "oracle", "-H", str(livecommerce_path)],
        env={"COLUMNS": "160"},
    )
    assert result.exit_code == 0, result.output
    for expected in (
        "skill loaded: stock_size",
        "check_stock (stock_check)",
        '"variant": "M"',
        "reply",
        "tool_rationality",
        "total",
        "latency",
    ):
        assert expected in result.stdout, expected


def test_run_through_a_served_model(livecommerce_path, tiny_model_path):
    from harnessctl.models.local import LocalModel

    url, stop = serve_in_background(LocalModel(f"local:{tiny_model_path}"), model_name="tiny")
    try:
        result = runner.invoke(
            app,
            [
                "run",
                "-q",
                "hi!",
                "-m",
                "openai/tiny",
                "--api-base",
                url,
                "--max-tokens",
                "8",
                "-H",
                str(livecommerce_path),
                "--json",
            ],
        )
    finally:
        stop()
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["record"]["model"] == "openai/tiny" and payload["record"]["model_steps"]


def test_run_against_an_unreachable_server_says_so_and_exits_2(livecommerce_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = runner.invoke(
        app,
        [
            "run",
            "-q",
            "hi",
            "-m",
            "openai/x",
            "--api-base",
            f"http://127.0.0.1:{port}/v1",
            "-H",
            str(livecommerce_path),
        ],
    )
    assert result.exit_code == 2
    assert "failed" in result.output and "is the server at" in result.output
    assert "cannot connect" in result.output and "InternalServerError" not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["-m", "nonsense-provider/x"], "not a model string litellm knows"),
        (["-m", "local:/no/such/folder"], "no such model folder"),
        (["-m", "local:."], "not a model folder (no config.json or adapter_config.json)"),
        (["-q", "   "], "the query is empty"),
        (["-p", "P999"], "no product 'P999' in the catalog"),
        (["-m", "oracle", "--api-base", "http://127.0.0.1:1/v1"], "--api-base is for served models"),
    ],
)
def test_run_bad_input_is_a_clear_message_and_exit_2(livecommerce_path, args, message):
    result = runner.invoke(app, ["run", "-q", "how much?", "-H", str(livecommerce_path), *args])  # a later -q wins
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_run_uses_the_configured_default_model(livecommerce_path, monkeypatch, tmp_path):
    from harnessctl.models import registry

    monkeypatch.chdir(tmp_path)  # no trained default here ...
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", tmp_path / "none")  # ... and none shipped
    monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    result = runner.invoke(app, ["run", "-q", "hi", "-H", str(livecommerce_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["record"]["model"] == "oracle"
    monkeypatch.setenv("HARNESSCTL_MODEL", "local:/no/such/folder")
    result = runner.invoke(app, ["run", "-q", "hi", "-H", str(livecommerce_path)])
    assert result.exit_code == 2 and "no such model folder" in result.output
