"""A small Llama model written as a GGUF file with the ``gguf`` package, so that the conversion a
real base goes through (``harnessctl model fetch``) is tested without downloading one.

The writer lays the file out as llama.cpp's converter does: GGUF tensor names, the query and key
projections permuted for llama.cpp's rotary layout (transformers' reader permutes them back), a
GPT-2 style BPE vocabulary with its merges, no ``output.weight`` (tied embeddings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _permute(weight: Any, n_head: int) -> Any:
    # llama.cpp's rotary layout: each head's two halves interleaved (convert_hf_to_gguf's permute)
    rows = weight.shape[0]
    return weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


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
    to ``path`` as an F32 GGUF file."""
    import gguf
    import numpy as np

    cfg = model.config
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name("test-llama")
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_rope_freq_base(float(getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]))
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    vocab = tokenizer.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = set(tokenizer.all_special_tokens)
    backend = json.loads(tokenizer.backend_tokenizer.to_str())
    merges = [m if isinstance(m, str) else " ".join(m) for m in backend["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokenizer.bos_token_id if tokenizer.bos_token_id is not None else 0)
    writer.add_eos_token_id(tokenizer.eos_token_id)

    n_head, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        writer.add_tensor(f"blk.{i}.attn_norm.weight", state[p + "input_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", state[p + "post_attention_layernorm.weight"])
        writer.add_tensor(
            f"blk.{i}.attn_q.weight", np.ascontiguousarray(_permute(state[p + "self_attn.q_proj.weight"], n_head))
        )
        writer.add_tensor(
            f"blk.{i}.attn_k.weight", np.ascontiguousarray(_permute(state[p + "self_attn.k_proj.weight"], n_kv))
        )
        writer.add_tensor(f"blk.{i}.attn_v.weight", state[p + "self_attn.v_proj.weight"])
        writer.add_tensor(f"blk.{i}.attn_output.weight", state[p + "self_attn.o_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", state[p + "mlp.gate_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_up.weight", state[p + "mlp.up_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_down.weight", state[p + "mlp.down_proj.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
