"""`transpose_output` of Dive into Deep Learning: reshape (-1, H, L, d), permute (0, 2, 1, 3),
reshape (B, L, H*d) — the inverse of transpose_qkv, on the (B*H, L, d) layout.

Source: https://github.com/d2l-ai/d2l-en, d2l/torch.py `MultiHeadAttention.transpose_output`
(commit not recorded).
Licence: MIT-0 (code).
Adapter: NumPy in and out through torch; the course's (..., H, L, d) folded to d2l's (N*H, L, d) and the
result unfolded to (..., L, H*d) (a layout change only).
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "merge_heads",
    "source": "d2l-ai/d2l-en d2l/torch.py transpose_output",
    "licence": "MIT-0",
    "verdict": "full",
    "cause": "correct: the heads moved next to the features, then merged.",
    "named": [],
    "false": [],
}


def transpose_output(X, num_heads):
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


def merge_heads(x):
    x = np.asarray(x)
    *lead, heads, length, d = x.shape
    out = transpose_output(torch.from_numpy(x).reshape(-1, length, d), heads)
    return out.reshape(*lead, length, heads * d).numpy()
