"""`masked_softmax`: classic bugs and correct alternatives."""
import numpy as np


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _full(mask, scores):
    return np.ones(scores.shape, bool) if mask is None else mask


def after_softmax(scores, mask):
    return _softmax(scores) * _full(mask, scores)


def zero_fill(scores, mask):
    return _softmax(np.where(_full(mask, scores), scores, 0.0).astype(scores.dtype))


def minus_inf_fill(scores, mask):
    return _softmax(np.where(_full(mask, scores), scores, -np.inf))


def d2l_style(scores, mask):
    return _softmax(np.where(_full(mask, scores), scores, -1e6).astype(scores.dtype))


def inverted(scores, mask):
    keep = ~np.broadcast_to(_full(mask, scores), scores.shape)
    shift = np.where(keep, scores, -np.inf).max(-1, keepdims=True)
    e = np.where(keep, np.exp(scores - np.where(np.isfinite(shift), shift, 0)), 0)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total == 0, 1, total)).astype(scores.dtype)


def no_max_shift(scores, mask):
    e = np.exp(scores) * _full(mask, scores)
    total = e.sum(-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def log_sum_exp(scores, mask):
    keep = np.broadcast_to(_full(mask, scores), scores.shape)
    filled = np.where(keep, scores, -np.inf)
    top = np.max(filled, axis=-1, keepdims=True)
    top = np.where(np.isinf(top), 0, top)
    with np.errstate(divide="ignore"):
        lse = top + np.log(np.sum(np.exp(filled - top), axis=-1, keepdims=True))
    out = np.where(keep & np.isfinite(lse), np.exp(filled - np.where(np.isfinite(lse), lse, 0)), 0)
    return out.astype(scores.dtype)


def float64_rows(scores, mask):
    keep = np.broadcast_to(_full(mask, scores), scores.shape)
    out = np.zeros(scores.shape, dtype=np.float64)
    for index in np.ndindex(scores.shape[:-1]):
        row, allowed = scores[index].astype(np.float64), keep[index]
        if allowed.any():
            e = np.exp(row[allowed] - row[allowed].max())
            out[index][allowed] = e / e.sum()
    return out.astype(scores.dtype)


def allennlp_style(scores, mask):
    # allenai/allennlp masked_softmax: softmax(x * mask), then * mask, renormalised.
    keep = _full(mask, scores)
    w = _softmax(scores * keep) * keep
    return (w / (w.sum(-1, keepdims=True) + 1e-13)).astype(scores.dtype)


WRONG = {
    after_softmax: "masking after the softmax",
    zero_fill: "filled with 0 instead of -inf",
    minus_inf_fill: "fully masked rows become NaN",
    d2l_style: "fully masked rows get uniform weights",
    inverted: "mask polarity inverted",
    no_max_shift: "without subtracting the row max",
    allennlp_style: "multiplied by the mask before the softmax",
}
CORRECT = [log_sum_exp, float64_rows]
