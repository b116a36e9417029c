"""The "efficient implementation equivalent to" torch.nn.functional.scaled_dot_product_attention,
from PyTorch's documentation: attn_bias filled with -inf where the boolean mask is False, added to
the scaled scores, softmax.

Source: https://github.com/pytorch/pytorch, torch/nn/functional.py, the docstring of
scaled_dot_product_attention (PyTorch 2.1+); commit not recorded.
Licence: BSD-3-Clause (PyTorch).
Adapter: NumPy in, NumPy out through torch; no dropout, not causal, default scale.
"""
import math

import numpy as np
import torch

OUTSIDE = {
    "exercise": "scaled_dot_product_attention",
    "source": "pytorch/pytorch torch/nn/functional.py scaled_dot_product_attention docstring",
    "licence": "BSD-3-Clause",
    "verdict": "loses",
    "failing": r"fully masked|all masked|padding|no key",
    "cause": "masked scores become -inf: a fully masked row is softmax of all -inf, NaN weights and a NaN output instead of zeros.",
    "named": [r"fully masked", r"-inf|NaN"],
    "false": [r"without the 1/sqrt|scale", r"transpos", r"uniform"],
}


def _docs_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)
    return attn_weight @ value, attn_weight


def scaled_dot_product_attention(q, k, v, mask=None):
    t = lambda a: torch.from_numpy(np.asarray(a))
    out, weights = _docs_sdpa(t(q), t(k), t(v), None if mask is None else t(mask))
    return out.numpy(), weights.numpy()
