"""`split_into_heads` of a GPT-4-Turbo-written NumPy multi-head attention kept in a code-quality study:
x.reshape(B, L, num_heads, depth), then np.transpose(x, perm=[0, 2, 1, 3]) — TensorFlow's keyword on NumPy.

Source: https://github.com/RasKrebs/llms4code_code_quality, multihead-attention/gpt-4-turbo/medium.py
(`MultiHeadAttention.split_into_heads`; commit not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: a function of (x, num_heads) with depth = features // num_heads (the class's self.depth).
"""
import numpy as np

OUTSIDE = {
    "exercise": "split_heads",
    "source": "RasKrebs/llms4code_code_quality multihead-attention/gpt-4-turbo/medium.py split_into_heads",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "np.transpose has no `perm` keyword (that is TensorFlow's), so every call raises TypeError.",
    "named": [r"TypeError|perm"],
    "false": [r"without the transpose|dtype|float64 for float32"],
}


def split_heads(x, num_heads):
    x = np.asarray(x)
    depth = x.shape[-1] // num_heads
    x = x.reshape(x.shape[0], x.shape[1], num_heads, depth)
    return np.transpose(x, perm=[0, 2, 1, 3])
