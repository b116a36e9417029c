"""`masked_softmax` of Dive into Deep Learning (attention scoring functions): entries beyond the valid
length are replaced *in place* by -1e6 (sequence_mask on a reshaped view), then softmax.

Source: https://github.com/d2l-ai/d2l-en, d2l/torch.py `sequence_mask` and `masked_softmax`
(chapter_attention-mechanisms-and-transformers/attention-scoring-functions.md; commit not recorded).
Licence: MIT-0 (code).
Adapter: the original takes valid lengths; the course gives a boolean mask, so the original's one
operation, `X[~mask] = value` on the flattened view, is applied with that mask; NumPy in and out
through torch.from_numpy (which shares memory, as the original's reshape shares its input's).
"""
import numpy as np
import torch
from torch import nn

OUTSIDE = {
    "exercise": "masked_softmax",
    "source": "d2l-ai/d2l-en d2l/torch.py masked_softmax",
    "licence": "MIT-0",
    "verdict": "loses",
    "failing": r"fully masked",
    "cause": "masked scores are replaced by -1e6, not excluded (a fully masked row comes out uniform), and the replacement is written into the caller's scores array.",
    "named": [r"fully masked", r"uniform|-1e6|large negative", r"in place|modif|chang\w+ (its|the|your) input"],
    "false": [r"overflow", r"float64 for float32"],
}


def _sequence_mask(X, mask, value=0):
    X[~mask] = value
    return X


def masked_softmax(scores, mask):
    X = torch.from_numpy(np.asarray(scores))
    if mask is None:
        return nn.functional.softmax(X, dim=-1).numpy()
    shape = X.shape
    allowed = torch.from_numpy(np.broadcast_to(np.asarray(mask, dtype=bool), shape).reshape(-1, shape[-1]).copy())
    X = _sequence_mask(X.reshape(-1, shape[-1]), allowed, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1).numpy()
