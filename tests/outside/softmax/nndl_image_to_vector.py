"""softmax of a "Neural Networks and Deep Learning" (Coursera, Ng) practice repository: exp, divided
by the sum over axis 1, no shift.

Source: https://github.com/andreemidio/NeuralNetworksandDeepLearning, code/image_to_vector/softmax.py
(commit not recorded; found through the public-code index).
Licence: none stated in the repository (public course exercise; reproduced for testing with attribution).
Adapter: `axis` accepted and ignored (the original always sums over axis 1).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "andreemidio/NeuralNetworksandDeepLearning code/image_to_vector/softmax.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "no max is subtracted (exp of a large logit overflows: NaN), and the sum is always over axis 1 (a 1-D input raises, other axes are ignored).",
    "named": [r"subtract\w*\s+the\s+(row'?s?\s+)?max", r"overflow", r"axis\s*1\b|over the second axis"],
    "false": [r"over axis 0", r"float64 for float32"],
}


def _nndl_softmax(x):
    x_exp = np.exp(x)
    x_sum = np.sum(np.exp(x), axis=1, keepdims=True)
    s = x_exp / x_sum
    return s


def softmax(x, axis=-1):
    return _nndl_softmax(np.asarray(x))
