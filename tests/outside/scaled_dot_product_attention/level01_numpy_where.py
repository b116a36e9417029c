"""The NumPy `scaled_dot_product_attention(q, k, v, mask=None)` of a "Level 01: basic multi-head attention shape
logic" exercise file: scores / sqrt(d), a 2-D mask given a batch axis, np.where(mask > 0, scores, -1e9), a
max-shifted softmax, weights @ v.

Source: a public repository found through the public-code index (file opening with the docstring "Level 01: basic multi-head
attention shape logic."; repository name not shown by the index; commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: none (same signature and return).
"""
import numpy as np

OUTSIDE = {
    "exercise": "scaled_dot_product_attention",
    "source": "public 'Level 01' multi-head attention exercise file (name not shown by the index)",
    "licence": "unknown",
    "verdict": "loses",
    "failing": r"fully masked",
    "cause": "masked scores become -1e9, not excluded (a fully masked row gets uniform weights, the mean of the values, instead of zeros), and the scale np.sqrt(d) is a float64 scalar that promotes float32 scores to float64.",
    "named": [r"fully masked", r"-1e9|large negative|uniform", r"float64 for float32"],
    "false": [r"without the 1/sqrt", r"transpos"],
}


def _level01_softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    ex = np.exp(x)
    return ex / np.sum(ex, axis=axis, keepdims=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(d)
    if mask is not None:
        if mask.ndim == 2:
            mask = mask[None, :, :]
        scores = np.where(mask > 0, scores, -1e9)
    weights = _level01_softmax(scores, axis=-1)
    out = np.matmul(weights, v)
    return out, weights
