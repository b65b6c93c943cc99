"""Adapter checkpoints: a LoRA adapter (peft) plus ``train.json`` naming the base it was trained on.

A trained stage on a pretrained base writes only what it changed — ``adapter_config.json`` and
``adapter_model.safetensors``, a few MB — and records its base by name, folder and fingerprint in
``train.json``'s ``base`` entry. Loading it (``local:``, ``shipped:``, ``serve``, ``eval``, a
later stage) finds that base, refuses one whose weights differ, and applies the adapter;
:func:`merge_adapter` writes base + adapter as one plain folder for engines that take no adapters.

>>> is_adapter(Path("/nonexistent"))
False
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.base import ModelError
from harnessctl.models.bases import BaseError, base_fingerprint, resolve_base
from harnessctl.models.tiny import usual_permissions

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
TRAIN_MANIFEST = "train.json"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


def is_adapter(folder: str | Path) -> bool:
    """Whether ``folder`` holds a peft adapter rather than a whole model."""
    return (Path(folder) / ADAPTER_CONFIG).is_file()


def base_entry(base: str, folder: Path | str) -> dict[str, Any]:
    """The ``base`` entry a stage writes in ``train.json``: the name it was given, the folder it
    resolved to and the weights' fingerprint.

    >>> base_entry("smollm2-135m", Path("/cache/bases/smollm2-135m"))   # doctest: +SKIP
    {'name': 'smollm2-135m', 'path': '/cache/bases/smollm2-135m', 'fingerprint': 'sha256:b313…'}
    """
    entry: dict[str, Any] = {"name": base, "path": str(folder)}
    if Path(str(folder)).is_dir():
        entry["fingerprint"] = base_fingerprint(Path(folder))
    return entry


def adapter_base(folder: str | Path) -> dict[str, Any]:
    """The base an adapter folder names (``train.json``'s ``base``, else peft's own record)."""
    folder = Path(folder)
    manifest_path = folder / TRAIN_MANIFEST
    if manifest_path.is_file():
        try:
            base = json.loads(manifest_path.read_text(encoding="utf-8")).get("base")
        except json.JSONDecodeError:
            raise ModelError(f"{manifest_path}: not valid JSON; the adapter's base cannot be read") from None
        if isinstance(base, dict) and base.get("name"):
            return base
        if isinstance(base, str) and base:
            return {"name": base}
    try:
        config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        raise ModelError(f"{folder / ADAPTER_CONFIG}: unreadable; the folder is not a usable adapter") from None
    name = config.get("base_model_name_or_path")
    if not name:
        raise ModelError(f"{folder}: the adapter names no base (no train.json base, no base_model_name_or_path)")
    return {"name": name}


def resolve_adapter_base(folder: str | Path, base_override: str | None = None) -> Path | str:
    """The base folder an adapter loads onto, checked against the fingerprint it recorded.

    ``base_override`` (a folder or known base name) replaces the recorded one, for an adapter moved
    to a machine whose base lives elsewhere; the fingerprint still has to match.
    """
    entry = adapter_base(folder)
    spec = base_override or entry.get("name") or ""
    recorded = entry.get("path")
    # where the name finds no folder here (a known base not fetched, or a name read as a hub id),
    # the folder the adapter was trained on, if it is still there
    fallback = Path(recorded) if base_override is None and recorded and Path(recorded).is_dir() else None
    try:
        resolved = resolve_base(spec)
    except BaseError:
        if fallback is None:
            raise
        resolved = fallback
    if not isinstance(resolved, Path) and fallback is not None:
        resolved = fallback
    expected = entry.get("fingerprint")
    if expected and isinstance(resolved, Path):
        found = base_fingerprint(resolved)
        if found != expected:
            raise BaseError(
                f"{folder}: the adapter was trained on base {entry.get('name')} with fingerprint "
                f"{expected[:19]}…, but {resolved} has {found[:19]}…; fetch that base "
                f"(`harnessctl model fetch {entry.get('name')}`) or retrain the adapter on this one"
            )
    return resolved


def tokenizer_source(folder: Path, base: Path | str) -> Path | str:
    """Where an adapter's tokenizer is read from: its own folder when it saved one, else its base's."""
    return folder if any((folder / n).is_file() for n in _TOKENIZER_FILES[:2]) else base


def load_adapter_model(
    folder: str | Path, *, dtype: Any = None, merge: bool = True, trainable: bool = False, base: str | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the adapter's base with the adapter applied — merged into the
    weights for inference (``merge``), or as a peft model to train further (``trainable``).

    >>> model, tokenizer = load_adapter_model("out/sft")          # doctest: +SKIP
    """
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    base_path = resolve_adapter_base(folder, base)
    tokenizer_from = tokenizer_source(folder, base_path)
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_from, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(base_path, local_files_only=True, dtype=dtype)
        model = PeftModel.from_pretrained(model, folder, is_trainable=trainable)
    if merge and not trainable:
        model = model.merge_and_unload()
    return model, tokenizer


def save_adapter(model: Any, folder: str | Path, dtype: str = "bfloat16") -> Path:
    """Save a peft model's adapter alone in ``folder``, its weights in ``dtype`` (bfloat16 halves
    the file; the adapter is cast back to the base's dtype on load), without peft's model card."""
    import torch
    from peft import get_peft_model_state_dict

    folder = Path(folder)
    cast = getattr(torch, dtype)
    state = {k: v.detach().to(cast).contiguous() for k, v in get_peft_model_state_dict(model).items()}
    model.save_pretrained(folder, state_dict=state)
    (folder / "README.md").unlink(missing_ok=True)
    return folder


def merge_adapter(folder: str | Path, out: str | Path, *, base: str | None = None, dtype: str = "float32") -> Path:
    """Write base + adapter as one plain Hugging Face folder (for vLLM, llama.cpp's converter or any
    engine without adapters), atomically, with the adapter's ``train.json`` marked ``merged``.

    >>> merge_adapter("out/sft", "out/sft-merged")                 # doctest: +SKIP
    PosixPath('out/sft-merged')
    """
    import torch

    folder, out = Path(folder), Path(out)
    if not is_adapter(folder):
        raise ModelError(f"{folder}: not an adapter (no {ADAPTER_CONFIG}); a whole model needs no merge")
    if out.exists() and any(out.iterdir()):
        raise ModelError(f"--out {out}: not empty; choose a new folder")
    model, tokenizer = load_adapter_model(folder, dtype=getattr(torch, dtype), base=base)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with quiet_transformers(), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        manifest_path = folder / TRAIN_MANIFEST
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
        manifest["merged"] = {"adapter": str(folder.resolve()), "base": manifest.get("base"), "dtype": dtype}
        (tmp / TRAIN_MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
        usual_permissions(tmp)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
