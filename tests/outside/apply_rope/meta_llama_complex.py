"""Meta's LLaMA rotary embedding: precompute_freqs_cis (float32 frequencies, torch.polar → complex64) and
apply_rotary_emb (view_as_complex over *adjacent* pairs (2i, 2i+1) of x.float(), times freqs_cis, back
with view_as_real and type_as).

Source: https://github.com/meta-llama/llama, llama/model.py (commit 57b0eb62de0636e75af471e49e2f1862d908d9d8,
as cited in thelonejordan/deeplearning.scratchpad models/llama/rope.py).
Licence: LLaMA 2 Community License (code reproduced for testing with attribution).
Adapter: one tensor of any rank (..., L, d) instead of (xq, xk) of (B, L, H, d): freqs_cis rows
offset .. offset + L - 1 broadcast against (..., L, d/2).
"""
import torch

OUTSIDE = {
    "exercise": "apply_rope",
    "source": "meta-llama/llama llama/model.py precompute_freqs_cis / apply_rotary_emb",
    "licence": "LLaMA 2 Community License",
    "verdict": "loses",
    "cause": "it rotates adjacent pairs (2i, 2i+1) (the GPT-J/LLaMA-original convention), not the contract's half-split pairs (i, i + d/2); it also computes in complex64 (float32).",
    "named": [r"adjacent|interleav|\(2i, ?2i ?\+ ?1\)|GPT-J|pairs? .*(2i|neighbo)|another order|permut"],
    "false": [r"wrong sign|sign (is )?flipped", r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored"],
}


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0, start: int = 0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(start, end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    return freqs_cis


def apply_rope(x, offset=0, base=10000.0):
    freqs_cis = precompute_freqs_cis(x.shape[-1], offset + x.shape[-2], base, start=offset)
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    x_out = torch.view_as_real(x_ * freqs_cis).flatten(-2)
    return x_out.type_as(x)
