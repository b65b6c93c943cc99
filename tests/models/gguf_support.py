"""A small Llama model written as a GGUF file with the ``gguf`` package, so that the conversion a
real base goes through (``harnessctl model fetch``) is tested without downloading one.

The writer is the product's (:mod:`harnessctl.models.gguf_export`): GGUF tensor names, the query
and key projections permuted for llama.cpp's rotary layout (transformers' reader permutes them
back), a GPT-2 style BPE vocabulary with its merges, no ``output.weight`` (tied embeddings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def small_llama(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialised two-layer Llama over ``tokenizer``'s vocabulary (tied embeddings)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config).eval()


def write_llama_gguf(model: Any, tokenizer: Any, path: Path) -> Path:
    """Write ``model`` (a ``LlamaForCausalLM``) and ``tokenizer`` (a byte-level BPE fast tokenizer)
    to ``path`` as an F32 GGUF file, with the product's writer (``model export-gguf``)."""
    from harnessctl.models.gguf_export import tokenizer_kv_from_hf
    from harnessctl.models.gguf_export import write_llama_gguf as write

    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    return write(state, model.config, tokenizer_kv_from_hf(tokenizer), path, qtype="f32", meta={"name": "test-llama"})
