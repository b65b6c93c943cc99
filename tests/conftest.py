"""Fixtures shared by every test room. Expensive ones are session-scoped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
LIVECOMMERCE = REPO_ROOT / "harnesses" / "livecommerce"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def livecommerce_path() -> Path:
    return LIVECOMMERCE


@pytest.fixture
def livecommerce():
    """A fresh in-memory copy of the shipped harness (tests may perturb it)."""
    from harnessctl.harness import load_harness

    return load_harness(LIVECOMMERCE, validate=False)


# -- the tiny model (models room) ---------------------------------------------------------------

#: Sources whose change makes the cached tiny model stale (builder, corpus, simulator, harness).
_TINY_MODEL_INPUTS = (
    "harnessctl/models",
    "harnessctl/sim",
    "harnessctl/runtime",
    "harnessctl/harness",
    "harnesses/livecommerce",
)


def _tiny_model_key() -> str:
    import hashlib

    digest = hashlib.sha256()
    for rel in _TINY_MODEL_INPUTS:
        for path in sorted((REPO_ROOT / rel).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".yaml", ".yml", ".json", ".jsonl", ".csv"):
                digest.update(str(path.relative_to(REPO_ROOT)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    """The untrained tiny model as `harnessctl model init` builds it (default config), cached
    under .cache/tiny-model/<hash of its inputs> so repeated runs and xdist workers share it."""
    from harnessctl.harness import load_harness
    from harnessctl.models.tiny import build_tiny_model

    target = REPO_ROOT / ".cache" / "tiny-model" / _tiny_model_key()
    if not (target / "config.json").is_file():
        try:
            build_tiny_model(target, load_harness(LIVECOMMERCE, validate=False))
        except (FileExistsError, OSError):
            if not (target / "config.json").is_file():  # another worker won the race: use its build
                raise
        import shutil
        import time

        for stale in target.parent.iterdir():  # builds from older sources, not touched for a day
            if stale.is_dir() and stale != target and time.time() - stale.stat().st_mtime > 86400:
                shutil.rmtree(stale, ignore_errors=True)
    return target


# -- a pretrained base, small (models and trainer rooms) ----------------------------------------


@pytest.fixture(scope="session")
def small_base_gguf(tmp_path_factory, tiny_model_path) -> Path:
    """A two-layer Llama over the tiny tokenizer, written as a GGUF file by the ``gguf`` package:
    what ``harnessctl model fetch`` converts, without a download."""
    from transformers import AutoTokenizer

    from tests.models.gguf_support import small_llama, write_llama_gguf

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    path = tmp_path_factory.mktemp("gguf") / "small-llama.F32.gguf"
    return write_llama_gguf(small_llama(tokenizer), tokenizer, path)


@pytest.fixture(scope="session")
def small_base(tmp_path_factory, small_base_gguf) -> Path:
    """``small_base_gguf`` converted into a base folder, as a fetched base is."""
    from harnessctl.models.bases import convert_gguf

    return convert_gguf(small_base_gguf, tmp_path_factory.mktemp("bases") / "small", source={"base": "small"})
