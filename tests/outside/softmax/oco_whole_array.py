"""softmax of an online-convex-optimisation course project: exp divided by the sum of the whole array.

Source: https://github.com/theophilec/oco-project, src/utils.py `softmax(x)` (commit not recorded).
Licence: none stated in the repository (reproduced for testing with attribution).
Adapter: `axis` accepted and ignored (the original normalises over every entry).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "theophilec/oco-project src/utils.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "it divides by the sum over the whole array (every entry, not each row), and subtracts no max (overflow at large logits).",
    "named": [r"(whole|entire) (array|input)|all (the )?entries|every entry|axis=None|sum of all", r"subtract\w*\s+the\s+(row'?s?\s+)?max|overflow"],
    "false": [r"over axis 0\b(?! whatever)", r"float64 for float32"],
}


def _oco_softmax(x):
    return np.exp(x) / np.exp(x).sum()


def softmax(x, axis=-1):
    return _oco_softmax(np.asarray(x))
