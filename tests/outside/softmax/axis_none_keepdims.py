"""A NumPy softmax with an axis argument: exp(x - x.max(axis, keepdims=True)) / its sum over the same axis
(the commented-out first version above it had no shift).

Source: a public repository found through the public-code index (file `import numpy as np` with a
commented-out `softmax(x, axis=None)` without the shift, then the shifted one; repository name not shown by
the index; commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: the course's default axis=-1 (the original's is None, the whole array).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "public NumPy softmax(x, axis=None) with keepdims (name not shown by the index)",
    "licence": "unknown",
    "verdict": "full",
    "cause": "correct.",
    "named": [],
    "false": [],
}


def _softmax(x, axis=None):
    unnormalized = np.exp(x - x.max(axis, keepdims=True))
    return unnormalized / unnormalized.sum(axis, keepdims=True)


def softmax(x, axis=-1):
    return _softmax(np.asarray(x), axis)
