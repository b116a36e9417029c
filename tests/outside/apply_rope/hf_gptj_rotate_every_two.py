"""Hugging Face GPT-J's rotary embedding: create_sinusoidal_positions (float32 table [sin | cos]),
rotate_every_two (stack(-x2, x1) over the odd/even features) and apply_rotary_pos_emb with sin/cos
repeat_interleave'd by 2.

Source: https://github.com/huggingface/transformers, src/transformers/models/gptj/modeling_gptj.py
(`create_sinusoidal_positions`, `rotate_every_two`, `apply_rotary_pos_emb`, v4.3x; commit not recorded).
Licence: Apache-2.0.
Adapter: the table's rows offset .. offset + L - 1; x of any rank (..., L, d) (GPT-J slices
x[:, :, :, ::2] on its 4-D layout: written x[..., ::2]).
"""
import torch

OUTSIDE = {
    "exercise": "apply_rope",
    "source": "huggingface/transformers models/gptj/modeling_gptj.py rotary embedding",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "cause": "it rotates adjacent pairs (2i, 2i+1) (rotate_every_two), the GPT-J convention, not the contract's half-split pairs (i, i + d/2).",
    "named": [r"adjacent|interleav|\(2i, ?2i ?\+ ?1\)|GPT-J|every two|another order|permut"],
    "false": [r"wrong sign|sign (is )?flipped", r"(fails|wrong) (with|on|at) .*offset|offset (is )?ignored"],
}


def create_sinusoidal_positions(num_pos, dim, base=10000.0, start=0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(start, start + num_pos, dtype=torch.int64).float(),
                                inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rope(x, offset=0, base=10000.0):
    sincos = create_sinusoidal_positions(x.shape[-2], x.shape[-1], base, start=offset)
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    sin = torch.repeat_interleave(sin, 2, -1).to(x.dtype)
    cos = torch.repeat_interleave(cos, 2, -1).to(x.dtype)
    return (x * cos) + (rotate_every_two(x) * sin)
