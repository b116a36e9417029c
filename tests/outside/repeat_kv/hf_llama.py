"""`repeat_kv` of Hugging Face's Llama: hidden_states[:, :, None].expand(B, Hkv, n_rep, L, d).reshape(B, Hkv*n_rep, L, d).

Source: https://github.com/huggingface/transformers, src/transformers/models/llama/modeling_llama.py
`repeat_kv` (v4.36+; also copied verbatim into e.g. mcrl/tt-metal
models/demos/qwen3/reference/qwen3_moe/sdpa_attention.py; commit not recorded).
Licence: Apache-2.0.
Adapter: none.
"""
import torch

OUTSIDE = {
    "exercise": "repeat_kv",
    "source": "huggingface/transformers models/llama/modeling_llama.py repeat_kv",
    "licence": "Apache-2.0",
    "verdict": "full",
    "cause": "correct.",
    "named": [],
    "false": [],
}


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)
