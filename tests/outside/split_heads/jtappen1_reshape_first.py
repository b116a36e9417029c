"""The head split of a "Machine Learning From Scratch" NumPy multi-head attention: reshape (B, L, H*d)
straight to (B, H, L, d), then transpose(0, 2, 1, 3).

Source: https://github.com/jtappen1/Machine-Learning-From-Scratch,
models/multi-head-attention/multi_head_attention.py (`Q_split = Q.reshape(batch_size, num_heads,
seq_len, d_k)`; `Q_heads = Q_split.transpose(0, 2, 1, 3)`; commit not recorded).
Licence: none stated in the repository (reproduced for testing with attribution).
Adapter: the script's two lines as a function of x (batch_size, seq_len from x, d_k = features // num_heads).
"""
import numpy as np

OUTSIDE = {
    "exercise": "split_heads",
    "source": "jtappen1/Machine-Learning-From-Scratch models/multi-head-attention/multi_head_attention.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "it reshapes straight to (B, H, L, d), which mixes positions with features, then swaps H and L: the result is (B, L, H, d) holding the wrong numbers.",
    "named": [r"reshap\w+ (straight|directly) to \(B, H, L, d\)|\(B, L, H, d\)|before the transpose|without (the )?transpos|axes swapped|swap"],
    "false": [r"dtype|float64 for float32", r"must raise ValueError|instead of ValueError"],
}


def split_heads(x, num_heads):
    x = np.asarray(x)
    batch_size, seq_len, d_model = x.shape[0], x.shape[-2], x.shape[-1]
    d_k = d_model // num_heads
    Q_split = x.reshape(batch_size, num_heads, seq_len, d_k)
    Q_heads = Q_split.transpose(0, 2, 1, 3)
    return Q_heads
