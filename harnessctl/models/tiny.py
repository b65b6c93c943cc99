"""Build the embedded default model from scratch, offline: tokenizer, chat template, random weights.

:func:`build_tiny_model` trains a byte-level BPE tokenizer on the project's own corpus
(:mod:`harnessctl.models.tiny_corpus`), sets the tiny chat template
(:mod:`harnessctl.models.tiny_template`), creates a randomly initialised small Qwen3 model and
saves both with ``save_pretrained``. The folder loads with ``AutoModelForCausalLM`` /
``AutoTokenizer`` (``local_files_only=True``) and runs as ``local:<folder>``. A trainer then
teaches it (``harnessctl train``); untrained, it writes junk, but every part of the stack that
needs a real model can already run on it.

Deterministic: the same harness, config and seed give byte-identical files.

>>> report = build_tiny_model(Path("models/tiny"), harness)   # doctest: +SKIP
>>> report.parameters < 5_000_000                              # doctest: +SKIP
True
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.harness import Harness
from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.syllables import SYLLABLES
from harnessctl.models.tiny_corpus import build_corpus, render_conversations
from harnessctl.models.tiny_template import END_OF_TEXT, IM_END
from harnessctl.models.tiny_tokenizer import syllable_drill, train_tokenizer

#: Written next to the weights: how the folder was built.
BUILD_FILE = "harnessctl_build.json"
BUILD_FORMAT = 1


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny model and of its build. The defaults are the measured recipe that
    learns to call renamed tools in minutes on two CPU cores: about 1 M parameters, 0.65 M in the
    layers and the rest in the tied embedding (its rows are the trained vocabulary)."""

    seed: int = 0
    vocab_size: int = field(default=4096, metadata={"help": "BPE vocabulary size, special tokens included"})
    hidden_size: int = field(default=128, metadata={"help": "model width"})
    intermediate_size: int = field(default=256, metadata={"help": "MLP width"})
    num_layers: int = field(default=4, metadata={"help": "transformer layers"})
    num_heads: int = field(default=4, metadata={"help": "attention heads (hidden_size must divide by it)"})
    num_kv_heads: int = field(default=4, metadata={"help": "key/value heads (num_heads must divide by it)"})
    max_position_embeddings: int = field(default=4096, metadata={"help": "longest sequence, prompt + reply"})
    corpus_conversations: int = field(default=400, metadata={"help": "conversations the tokenizer is trained on"})
    corpus_source: str = field(default="auto", metadata={"help": "auto | oracle | harness"})

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} must be a multiple of num_heads {self.num_heads}; change one of them"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} must be a multiple of num_kv_heads {self.num_kv_heads}")
        min_vocab = 256 + len(SYLLABLES) + 64
        if self.vocab_size < min_vocab:
            raise ValueError(
                f"vocab_size {self.vocab_size} is too small: at least {min_vocab} (bytes + name syllables + markers)"
            )
        if self.corpus_source not in ("auto", "oracle", "harness"):
            raise ValueError(f"corpus_source must be auto, oracle or harness (got {self.corpus_source!r})")
        if self.corpus_conversations < 1:
            raise ValueError("corpus_conversations must be at least 1")


@dataclass
class TinyBuildReport:
    """What :func:`build_tiny_model` made, and how long each part took."""

    path: str
    parameters: int
    vocab_size: int
    corpus_source: str
    corpus_conversations: int
    corpus_chars: int
    seconds: dict[str, float]
    config: dict[str, Any]
    harness: str
    harness_version: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_tiny_model(
    out: Path,
    harness: Harness,
    config: TinyModelConfig = TinyModelConfig(),
    *,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> TinyBuildReport:
    """Build the tiny model into ``out`` (a new folder; ``overwrite`` replaces an old one).

    The folder is assembled in a temporary sibling and moved into place at the end, so an
    interrupted build leaves nothing half-written.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} already exists and is not empty; choose another --out or pass --force")
    step = progress or (lambda _msg: None)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    step("rendering the corpus")
    conversations, source = build_corpus(
        harness, n=config.corpus_conversations, seed=config.seed, source=config.corpus_source
    )
    texts = list(render_conversations(conversations))
    timings["corpus"] = time.perf_counter() - t0

    step("training the tokenizer")
    t = time.perf_counter()
    tokenizer = train_tokenizer(
        [*texts, *syllable_drill()], vocab_size=config.vocab_size, model_max_length=config.max_position_embeddings
    )
    timings["tokenizer"] = time.perf_counter() - t

    step("initialising the model")
    t = time.perf_counter()
    model = _init_model(tokenizer, config)
    parameters = sum(p.numel() for p in model.parameters())
    timings["model"] = time.perf_counter() - t

    step("saving")
    t = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    except OSError as e:  # named as the folder asked for, not the staging folder beside it
        raise OSError(e.errno, f"cannot write the model there ({e.strerror})", str(out)) from None
    try:
        with quiet_transformers():
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
        timings["save"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - t0
        report = TinyBuildReport(
            path=str(out),
            parameters=parameters,
            vocab_size=len(tokenizer),
            corpus_source=source,
            corpus_conversations=len(conversations),
            corpus_chars=sum(len(x) for x in texts),
            seconds={k: round(v, 3) for k, v in timings.items()},
            config=asdict(config),
            harness=harness.name,
            harness_version=harness.version,
        )
        manifest = {
            "format": BUILD_FORMAT,
            "config": asdict(config),
            "harness": harness.name,
            "harness_version": harness.version,
            "corpus_source": source,
            "corpus_sha256": hashlib.sha256("\n".join(texts).encode()).hexdigest(),
            "parameters": parameters,
            "vocab_size": len(tokenizer),
            "trained": False,
        }
        (staging / BUILD_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
        usual_permissions(staging)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def usual_permissions(folder: Path) -> None:
    """Give a folder made by mkdtemp (private) and its files the permissions of any file the user writes."""
    # mkdtemp makes a private folder; the model should read like any file the user writes.
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for f in folder.iterdir():
        f.chmod(0o666 & ~umask)


def _init_model(tokenizer: Any, config: TinyModelConfig) -> Any:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    eos = tokenizer.convert_tokens_to_ids(IM_END)
    pad = tokenizer.convert_tokens_to_ids(END_OF_TEXT)
    qcfg = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads,
        head_dim=config.hidden_size // config.num_heads,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=None,
        use_cache=True,
        dtype="float32",
    )
    torch.manual_seed(config.seed)
    model = Qwen3ForCausalLM(qcfg)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad, do_sample=False)
    return model
