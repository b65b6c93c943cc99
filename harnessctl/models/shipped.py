"""Checkpoints shipped inside the package: ``harnessctl/models/data/<name>/``, named ``shipped:<name>``.

A shipped model is a plain Hugging Face folder reduced to what inference needs (config, generation
config, weights, tokenizer files, chat template) plus the trainer's ``train.json`` (stage, parent,
data hash, config) and ``SHIPPED.json`` (where it came from, its scores, the command that
reproduces it). :func:`install_model` copies a trained folder there atomically; :func:`list_shipped`
reads them back. ``shipped:<name>`` resolves to ``local:<folder>`` (see
:func:`harnessctl.models.registry.expand_model_spec`).

>>> [m.name for m in list_shipped(Path("/nonexistent"))]
[]
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessctl.models import registry
from harnessctl.models.base import ModelError
from harnessctl.models.registry import MODEL_ENV, SHIPPED_DATA_DIR, SHIPPED_PREFIX, default_model_source, shipped_names

#: The record of where a shipped model came from, written beside its weights.
SHIPPED_FILE = "SHIPPED.json"
SHIPPED_VERSION = 1
#: The trainer's manifest of the checkpoint (stage, parent, data hash, config).
TRAIN_MANIFEST = "train.json"
#: Files a model folder needs for inference; everything else (``checkpoint-*`` folders, optimizer,
#: scheduler and RNG state, trainer state, training arguments) stays behind.
INFERENCE_FILES = (
    "config.json",
    "generation_config.json",
    "*.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "adapter_config.json",  # a LoRA adapter: its weights are adapter_model.safetensors, its base named in train.json
    TRAIN_MANIFEST,
)
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass
class ShippedModel:
    """One shipped checkpoint: its ``name`` (``shipped:<name>``), its folder and its ``SHIPPED.json``."""

    name: str
    path: Path
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        return f"shipped:{self.name}"

    @property
    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())


def check_name(name: str) -> str:
    """``name`` if it can name a shipped model (lower-case letters, digits, ``.``, ``_``, ``-``).

    >>> check_name("fixed-sft")
    'fixed-sft'
    """
    if not _NAME.match(name or ""):
        raise ModelError(
            f"--as {name!r}: a shipped model's name is lower-case letters, digits, '.', '_' or '-' (e.g. hat, fixed-sft)"
        )
    return name


def list_shipped(data_root: Path | None = None) -> list[ShippedModel]:
    """Every shipped model, by name, with its ``SHIPPED.json`` (empty when the file is missing or unreadable)."""
    root = SHIPPED_DATA_DIR if data_root is None else Path(data_root)
    models = []
    for name in shipped_names(root):
        try:
            info = json.loads((root / name / SHIPPED_FILE).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            info = {}
        models.append(ShippedModel(name, root / name, info if isinstance(info, dict) else {}))
    return models


@dataclass
class ModelCatalog:
    """What ``harnessctl model list`` shows: the shipped ``models`` and the default model (``spec``
    as :func:`~harnessctl.models.registry.default_model_source` gives it, its ``source``, ``why``
    in words, and ``default_name`` when it is a shipped model)."""

    models: list[ShippedModel]
    spec: str
    source: str
    why: str
    default_name: str | None = None

    @property
    def default(self) -> str:
        """The default model as a ``--model`` value (``shipped:<name>`` for a shipped one)."""
        return f"shipped:{self.default_name}" if self.default_name else self.spec

    def to_dict(self) -> dict[str, Any]:
        return {
            "default": {"model": self.default, "source": self.source, "why": self.why},
            "shipped": [
                {"name": m.name, "model": m.spec, "default": m.name == self.default_name, **m.info} for m in self.models
            ],
        }


def model_catalog() -> ModelCatalog:
    """The shipped models and the model commands use without ``--model``, and why.

    >>> catalog = model_catalog()
    >>> catalog.source in ("env", "trained", "shipped", "oracle"), isinstance(catalog.to_dict()["shipped"], list)
    (True, True)
    """
    models = list_shipped()
    spec, source = default_model_source()
    default_name = registry.SHIPPED_MODEL_DIR.name if source == "shipped" else None  # read when called
    if spec.startswith(SHIPPED_PREFIX):  # $HARNESSCTL_MODEL may name a shipped model
        default_name = spec[len(SHIPPED_PREFIX) :]
    why = {
        "env": f"${MODEL_ENV} is set",
        "trained": "a trained default is in .harnessctl/models/default",
        "shipped": f"no ${MODEL_ENV}, no trained default: the shipped {default_name} model",
        "oracle": f"no ${MODEL_ENV}, no trained default, no shipped {registry.SHIPPED_MODEL_DIR.name} model: the reference policy",
    }[source]
    return ModelCatalog(models, spec, source, why, default_name)


def inference_files(folder: Path) -> list[Path]:
    """The files of ``folder`` (top level only) that inference needs, sorted by name."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and any(fnmatch.fnmatch(p.name, pat) for pat in INFERENCE_FILES)
    )


def missing_for_inference(folder: Path) -> list[str]:
    """What ``folder`` lacks to load as a model (config, weights, tokenizer); empty when it loads.
    An adapter needs its config, its weights and ``train.json`` naming its base (whose tokenizer it
    uses unless it saved its own)."""
    if (folder / "adapter_config.json").is_file():
        missing = [] if (folder / "adapter_model.safetensors").is_file() else ["adapter_model.safetensors"]
        return missing + ([] if (folder / TRAIN_MANIFEST).is_file() else [f"{TRAIN_MANIFEST} (names the base)"])
    missing = [] if (folder / "config.json").is_file() else ["config.json"]
    if not any(folder.glob("*.safetensors")):
        missing.append("weights (*.safetensors)")
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer_config.json").is_file():
        missing.append("a tokenizer (tokenizer.json)")
    return missing


def install_model(
    source: Path, name: str, info: dict[str, Any], *, data_root: Path | None = None, force: bool = False
) -> ShippedModel:
    """Copy the inference files of the model folder ``source`` to ``<data_root>/<name>/`` with
    ``info`` as its ``SHIPPED.json``. Atomic: the copy is made in a temporary folder beside the
    target and renamed into place, so a stopped copy never leaves a half model. An existing model
    of that name is replaced only with ``force``. Raises :class:`ModelError` saying what to do.

    >>> install_model(Path("experiments/full/arms/hat/model"), "hat", {"arm": "hat"})   # doctest: +SKIP
    ShippedModel(name='hat', ...)
    """
    root = SHIPPED_DATA_DIR if data_root is None else Path(data_root)
    check_name(name)
    missing = missing_for_inference(source)
    if missing:
        raise ModelError(f"{source}: not a finished model folder (missing {', '.join(missing)})")
    target = root / name
    if target.exists() and not force:
        raise ModelError(f"{target}: a model named {name!r} is already shipped; pass --force to replace it")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    old: Path | None = None
    try:
        files = inference_files(source)
        for f in files:
            shutil.copyfile(f, staging / f.name)
            os.chmod(staging / f.name, 0o644)  # package data is readable by all (a trainer may save 0600 weights)
        record = {
            "shipped_version": SHIPPED_VERSION,
            "name": name,
            **info,
            "files": {f.name: f.stat().st_size for f in files},
        }
        (staging / SHIPPED_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.chmod(staging, 0o755)  # mkdtemp makes it private; a package folder is readable by all
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{name}-replaced-", dir=root))
            os.replace(target, old / name)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None and not target.exists():
            os.replace(old / name, target)  # put the previous model back
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return ShippedModel(name, target, record)
