"""A NumPy softmax with one branch per rank: for 2-D input the row max subtracted in place, exp, divided by
the row sum; for 1-D a branch written `elif x.dim == 1:` with `x.max(x)`; any other rank returned as it came.

Source: a public repository found through the public-code index (file `import numpy as np` then
`def softmax(x): if x.ndim == 2: ... elif x.dim == 1: ...`; repository name not shown by the index;
commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: `axis` accepted and unused (the original has none: rows of a 2-D array).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "public NumPy softmax with rank branches (name not shown by the index)",
    "licence": "unknown",
    "verdict": "loses",
    "cause": "only 2-D input is handled (always over axis 1, whatever axis says): any other rank reaches `elif x.dim == 1`, and NumPy arrays have no .dim (AttributeError); the 2-D branch also modifies its input in place.",
    "named": [r"AttributeError|x\.dim|no attribute 'dim'", r"modified in place|modif\w+ (its|the|your) input"],
    "false": [r"without subtracting the max|overflow"],
}


def softmax(x, axis=-1):
    if x.ndim == 2:
        x -= x.max(axis=1, keepdims=True)
        x = np.exp(x)
        x /= x.sum(axis=1, keepdims=True)
    elif x.dim == 1:
        x = x - x.max(x)
        x = np.exp(x) / np.sum(np.exp(x))
    return x
