"""softmax "from scratch" of Dive into Deep Learning (chapter "Softmax Regression
Implementation from Scratch"): `X_exp = exp(X); partition = X_exp.sum(1, keepdims=True)`.

Source: https://github.com/d2l-ai/d2l-en, chapter_linear-classification/softmax-regression-scratch.md
(`def softmax(X)`), PyTorch tab; commit not recorded.
Licence: MIT-0 for the code (d2l-en's LICENSE-SUMMARY: sample code MIT-0).
Adapter: NumPy in, NumPy out through torch (the original is a torch function of a 2-D tensor); `axis`
accepted and ignored (the original always sums over dim 1).
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "softmax",
    "source": "d2l-ai/d2l-en softmax-regression-scratch (softmax)",
    "licence": "MIT-0",
    "verdict": "loses",
    "cause": "no max subtracted (exp overflows at large logits) and the sum is always over dim 1 (1-D input crashes, axis ignored).",
    "named": [r"subtract\w*\s+the\s+(row'?s?\s+)?max", r"overflow", r"axis|dim(ension)? 1"],
    "false": [r"float64 for float32"],
}


def _d2l_softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdims=True)
    return X_exp / partition


def softmax(x, axis=-1):
    return _d2l_softmax(torch.from_numpy(np.asarray(x))).numpy()
