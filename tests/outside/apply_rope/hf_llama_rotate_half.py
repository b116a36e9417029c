"""Hugging Face Llama's rotary embedding: LlamaRotaryEmbedding (inv_freq in float32, freqs = t * inv_freq
in float32, emb = cat(freqs, freqs), cos/sin cast to x's dtype) with `rotate_half` and
`apply_rotary_pos_emb` (q * cos + rotate_half(q) * sin).

Source: https://github.com/huggingface/transformers, src/transformers/models/llama/modeling_llama.py
(v4.38-era `LlamaRotaryEmbedding`, `rotate_half`, `apply_rotary_pos_emb`; the same rotate_half in
Alan-404/BATTS model/utils/common.py; commit not recorded).
Licence: Apache-2.0.
Adapter: positions offset .. offset + L - 1 (its position_ids); one tensor instead of (q, k); no
unsqueeze (cos/sin of shape (L, d) broadcast against x (..., L, d)).
"""
import torch

OUTSIDE = {
    "exercise": "apply_rope",
    "source": "huggingface/transformers models/llama/modeling_llama.py rotary embedding",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"2500|3499|position at",
    "cause": "the angles are computed in float32 (inv_freq and t * inv_freq), so at positions in the thousands a float64 input gets angles off by ~1e-4 rad (the contract asks for float64 angles); an odd d is not refused with ValueError.",
    "named": [r"float32 (angles|tables|frequenc|arithmetic|rounding)|angles (computed )?in float32|float64 angles"],
    "false": [r"interleav|adjacent pairs|\(2i, 2i\+1\)", r"wrong sign|sign (is )?flipped", r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored",
              r"failing ones are (among those with|on the rungs?) '?a position in the thousands, float64'?\."],
}


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _llama_cos_sin(x, position_ids, dim, base):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    inv_freq_expanded = inv_freq[:, None].float()
    position_ids_expanded = position_ids[None, :].float()
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(0, 1)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def apply_rope(x, offset=0, base=10000.0):
    cos, sin = _llama_cos_sin(x, torch.arange(offset, offset + x.shape[-2]), x.shape[-1], base)
    return (x * cos) + (rotate_half(x) * sin)
