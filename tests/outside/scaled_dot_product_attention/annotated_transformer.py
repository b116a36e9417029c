"""`attention` of The Annotated Transformer (Harvard NLP): scores / sqrt(d_k), masked_fill(mask == 0,
-1e9), softmax, optional dropout, then p_attn @ value.

Source: https://github.com/harvardnlp/annotated-transformer, the_annotated_transformer.py,
`def attention(query, key, value, mask=None, dropout=None)` (2022 edition; commit not recorded).
Licence: MIT.
Adapter: NumPy in, NumPy out through torch; the course's boolean mask (True = may attend) is the
original's own convention (1 = keep, `mask == 0` filled), so it is passed as it is.
"""
import math

import numpy as np
import torch

OUTSIDE = {
    "exercise": "scaled_dot_product_attention",
    "source": "harvardnlp/annotated-transformer the_annotated_transformer.py attention",
    "licence": "MIT",
    "verdict": "loses",
    "failing": r"fully masked|all masked|padding|no key",
    "cause": "masked scores are set to -1e9, not excluded: a fully masked query row gets uniform weights and the mean of the values instead of zeros.",
    "named": [r"fully masked", r"-1e9|large negative|finite fill|uniform"],
    "false": [r"without the 1/sqrt|scale", r"transpos", r"float64 for float32"],
}


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


def scaled_dot_product_attention(q, k, v, mask=None):
    t = lambda a: torch.from_numpy(np.asarray(a))
    out, weights = attention(t(q), t(k), t(v), None if mask is None else t(mask))
    return out.numpy(), weights.numpy()
