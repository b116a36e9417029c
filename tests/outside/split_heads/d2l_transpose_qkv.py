"""`transpose_qkv` of Dive into Deep Learning (multi-head attention): reshape (B, L, H, -1), permute
(0, 2, 1, 3), then fold the heads into the batch, (B*H, L, d).

Source: https://github.com/d2l-ai/d2l-en, d2l/torch.py `MultiHeadAttention.transpose_qkv`
(chapter_attention-mechanisms-and-transformers/multihead-attention.md; commit not recorded).
Licence: MIT-0 (code).
Adapter: NumPy in and out through torch; its (B*H, L, d) layout unfolded to the course's (B, H, L, d).
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "split_heads",
    "source": "d2l-ai/d2l-en d2l/torch.py transpose_qkv",
    "licence": "MIT-0",
    "verdict": "loses",
    "failing": r"leading axis|leading axes|divisible",
    "cause": "it assumes exactly 3-D input (B, L, H*d), so no-batch or extra leading axes fail, and a last axis not divisible by num_heads raises torch's RuntimeError instead of ValueError.",
    "named": [r"3-D|three|leading ax[ie]s|exactly one batch|X\.shape\[0\], X\.shape\[1\]", r"ValueError"],
    "false": [r"without the transpose|transpose (is )?missing", r"dtype|float64 for float32"],
}


def transpose_qkv(X, num_heads):
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def split_heads(x, num_heads):
    x = np.asarray(x)
    out = transpose_qkv(torch.from_numpy(x), num_heads)
    return out.reshape(-1, num_heads, out.shape[1], out.shape[2]).numpy()
