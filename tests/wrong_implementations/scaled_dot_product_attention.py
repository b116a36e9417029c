"""`scaled_dot_product_attention`: classic bugs and correct alternatives."""
import math

import numpy as np

from solutions.masking import masked_softmax


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def no_scale(q, k, v, mask=None):
    w = masked_softmax(q @ k.swapaxes(-1, -2), mask)
    return w @ v, w


def divides_by_d_k(q, k, v, mask=None):
    w = masked_softmax(q @ k.swapaxes(-1, -2) / q.shape[-1], mask)
    return w @ v, w


def mask_after_softmax(q, k, v, mask=None):
    w = _softmax(q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1]).astype(q.dtype))
    if mask is not None:
        w = w * mask
    return w @ v, w


def multiplies_scores_by_mask(q, k, v, mask=None):
    s = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s * mask
    w = _softmax(s)
    return w @ v, w


def minus_1e9_fill(q, k, v, mask=None):
    s = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -1e9).astype(q.dtype)
    w = _softmax(s)
    return w @ v, w


def minus_inf_fill(q, k, v, mask=None):
    s = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _softmax(s)
    return w @ v, w


def inverted_mask(q, k, v, mask=None):
    w = masked_softmax(q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1]), None if mask is None else ~mask)
    return w @ v, w


def einsum(q, k, v, mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    w = masked_softmax(scores, mask)
    return np.einsum("...qk,...kd->...qd", w, v), w


def scaled_queries_float64(q, k, v, mask=None):
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    w = masked_softmax((q64 / np.sqrt(q.shape[-1])) @ np.swapaxes(k64, -1, -2), mask)
    return (w @ v64).astype(q.dtype), w.astype(q.dtype)


def own_masked_softmax(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    keep = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    shifted = np.where(keep, scores, -np.inf)
    top = shifted.max(-1, keepdims=True)
    e = np.where(keep, np.exp(shifted - np.where(np.isfinite(top), top, 0)), 0).astype(scores.dtype)
    total = e.sum(-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return w @ v, w


WRONG = {
    no_scale: "without the 1/sqrt(d_k) scale",
    divides_by_d_k: "scaled by 1/d_k instead of 1/sqrt(d_k)",
    mask_after_softmax: "masked after the softmax",
    multiplies_scores_by_mask: "filled with 0 instead of -inf",
    minus_1e9_fill: "fully masked rows get uniform weights",
    minus_inf_fill: "fully masked rows become NaN",
    inverted_mask: "mask polarity inverted",
}
CORRECT = [einsum, scaled_queries_float64, own_masked_softmax]
