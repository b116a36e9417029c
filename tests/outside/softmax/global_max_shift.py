"""softmax shifted by the max of the whole array, not of each row: the form of many blog posts
and course notebooks (`e = np.exp(x - np.max(x)); e / e.sum(axis=-1, keepdims=True)`).

Source: e.g. the NumPy softmax of "The Softmax function and its derivative" (Eli Bendersky's blog,
2016, `stablesoftmax(x)`: `shiftx = x - np.max(x)`), applied row-wise here as its users do;
commit not applicable.
Licence: public blog code (unlicensed snippet, public domain per the blog's notice); logic reproduced with attribution.
Adapter: the sum over `axis` (the blog's is a 1-D function).
"""
import numpy as np

OUTSIDE = {
    "exercise": "softmax",
    "source": "eli.thegreenplace.net 2016 softmax post (stablesoftmax), applied along an axis",
    "licence": "public blog snippet",
    "verdict": "loses",
    "cause": "one max for the whole array: a row far below it underflows to all zeros and gives 0/0 = NaN.",
    "named": [r"(whole|entire) (array|input)'?s? max|global max|max of (the )?(whole|all)", r"underflow"],
    "false": [r"without subtracting the max", r"overflow", r"over axis 0", r"float64 for float32"],
}


def _stablesoftmax(x, axis):
    shiftx = x - np.max(x)
    exps = np.exp(shiftx)
    return exps / np.sum(exps, axis=axis, keepdims=True)


def softmax(x, axis=-1):
    return _stablesoftmax(np.asarray(x), axis)
