"""Which model a command uses when none is named: ``$HARNESSCTL_MODEL``, then a user-trained
``.harnessctl/models/default``, then the HAT model shipped in the package, and the oracle only
when nothing else exists — always said on stderr."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from harnessctl.cli.main import app
from harnessctl.models import registry
from harnessctl.models.registry import DEFAULT_MODEL_DIR, default_model_source

runner = CliRunner()


def _checkpoint(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def test_environment_then_trained_then_shipped_then_oracle(tmp_path):
    shipped, root = tmp_path / "package" / "hat", tmp_path / "project"
    root.mkdir()
    assert default_model_source(environ={}, root=root, shipped=shipped) == ("oracle", "oracle")
    _checkpoint(shipped)
    assert default_model_source(environ={}, root=root, shipped=shipped) == (f"local:{shipped}", "shipped")
    trained = _checkpoint(root / DEFAULT_MODEL_DIR)
    assert default_model_source(environ={}, root=root, shipped=shipped) == (f"local:{trained}", "trained")
    env = {"HARNESSCTL_MODEL": "openai/mia"}
    assert default_model_source(environ=env, root=root, shipped=shipped) == ("openai/mia", "env")


def test_run_without_a_model_uses_the_shipped_model_and_says_so(
    tiny_model_path, livecommerce_path, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)  # no user-trained default here
    monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", tiny_model_path)
    result = runner.invoke(app, ["run", "-q", "how much?", "-H", str(livecommerce_path), "--max-tokens", "8", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["record"]["model"] == f"local:{tiny_model_path}"
    assert "the shipped HAT model" in result.stderr


def test_serve_without_a_model_and_nothing_to_serve_says_what_to_pass(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", tmp_path / "none")
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 2
    assert (
        "cannot be served" in result.output and "no MODEL given" in result.output and "Traceback" not in result.output
    )


def test_the_shipped_default_is_named_not_located(tiny_model_path, livecommerce_path, monkeypatch, tmp_path):
    """Without --model, the shipped model is ``shipped:hat`` in the record, the run and `harnessctl
    runs`, never its install path (which wraps over lines and differs per machine)."""
    data = tmp_path / "package-data"
    data.mkdir()
    (data / "hat").symlink_to(tiny_model_path, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HARNESSCTL_MODEL", raising=False)
    monkeypatch.setattr(registry, "SHIPPED_DATA_DIR", data)
    monkeypatch.setattr(registry, "SHIPPED_MODEL_DIR", data / "hat")
    assert default_model_source(environ={}, root=tmp_path) == ("shipped:hat", "shipped")
    result = runner.invoke(app, ["run", "-q", "how much?", "-H", str(livecommerce_path), "--max-tokens", "8", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["record"]["model"] == "shipped:hat"


def test_runs_recorded_with_the_install_path_are_listed_by_name():
    from harnessctl.eval.summary import model_label

    assert model_label(f"local:{registry.SHIPPED_DATA_DIR / 'hat'}") == "shipped:hat"
    assert model_label("local:/elsewhere/hat") == "local:/elsewhere/hat"
