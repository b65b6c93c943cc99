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

#: What ``build_tiny_model(target, load_harness(LIVECOMMERCE, validate=False))`` reads, and only
#: that, so that an edit anywhere else keeps the cached model: the builder with its chat template,
#: tokenizer trainer and name syllables; the oracle corpus its tokenizer is trained on (the
#: simulator's generated cases, catalog, backends with their faults and the oracle, run through the
#: episode loop, whose records and tool-error messages are the corpus text); the harness loader and
#: renderer; the shipped harness. Found by tracing one build: every file in which it runs a function
#: or opens a file, plus the modules whose constants and record types it uses (the template's
#: tokens, ``types``, ``record``, ``harnessctl/errors.py`` as the base of the tool errors it quotes).
#: Left out: the package ``__init__`` files and what they import without the build calling it (the
#: scorer, the phrasings, the harness's diff, save and validation, ...). A module the build starts
#: to use must be added here, or its edits will not rebuild the model.
_TINY_MODEL_INPUTS = (
    *(
        f"harnessctl/models/{name}.py"
        for name in (
            "tiny",
            "tiny_corpus",
            "tiny_template",
            "tiny_tokenizer",
            "syllables",
            "_quiet",
            "registry",
            "base",
            "types",
            "toolcall_text",
        )
    ),
    *(
        f"harnessctl/sim/{name}.py"
        for name in (
            "corpus",
            "generate",
            "templates",
            "task",
            "intents",
            "expectations",
            "facts",
            "meaning",
            "wording",
            "case",
            "catalog",
            "world",
            "backends",
            "compose",
            "oracle",
        )
    ),
    "harnessctl/sim/data/catalog.json",
    *(
        f"harnessctl/runtime/{name}.py"
        for name in ("loop", "environment", "guards", "messages", "record", "text", "validation")
    ),
    *(f"harnessctl/harness/{name}.py" for name in ("loader", "yamlio", "model", "render", "backends")),
    "harnessctl/errors.py",
    "harnesses/livecommerce",
)


def _tiny_model_key() -> str:
    import hashlib

    digest = hashlib.sha256()
    for rel in _TINY_MODEL_INPUTS:
        root = REPO_ROOT / rel
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
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
