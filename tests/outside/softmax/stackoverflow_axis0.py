"""softmax from the most-voted Stack Overflow answer ("How to implement the Softmax function in
Python"): shift by the global max, then divide by the sum over axis 0.

Source: https://stackoverflow.com/questions/34968722 (accepted answer, 2016), `softmax(x)`:
`e_x = np.exp(x - np.max(x)); return e_x / e_x.sum(axis=0)`; commit not applicable.
Licence: CC BY-SA 3.0 (Stack Overflow content); logic reproduced with attribution.
Adapter: accepts and ignores `axis` (the original has no axis argument: it always sums over axis 0).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "https://stackoverflow.com/questions/34968722 (accepted answer)",
    "licence": "CC BY-SA 3.0",
    "verdict": "loses",
    "cause": "it normalises over axis 0 whatever axis is asked (and shifts by the global max, not each row's).",
    "named": [r"axis\s*0", r"over the first axis", r"columns? .*sum to one|normali[sz]\w* over .*axis"],
    "false": [r"without subtracting the max", r"overflow", r"float64 for float32|dtype"],
}


def _stackoverflow_softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum(axis=0)


def softmax(x, axis=-1):
    return _stackoverflow_softmax(np.asarray(x))
