"""Chapter 1 reference: scaled dot-product attention (NumPy)."""
import math

import numpy as np

from .masking import masked_softmax


def _float(x):
    x = np.asarray(x)
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float64)


def softmax(x, axis=-1):
    x = _float(x)
    # exp(x - max) <= 1, so nothing overflows; the shift cancels in the ratio.
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    q, k, v = _float(q), _float(k), _float(v)
    # math.sqrt, not np.sqrt: a NumPy float64 scalar would promote float32 scores.
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # (..., Lq, Lk)
    weights = softmax(scores) if mask is None else masked_softmax(scores, mask)
    return weights @ v, weights  # (..., Lq, d_v), (..., Lq, Lk)
