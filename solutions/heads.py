"""Chapter 3 reference: splitting and merging heads (NumPy)."""
import numpy as np


def split_heads(x, num_heads):
    x = np.asarray(x)
    *lead, length, features = x.shape
    if features % num_heads:
        raise ValueError(f"{features} features do not split into {num_heads} heads")
    x = x.reshape(*lead, length, num_heads, features // num_heads)  # (B, L, H, d)
    return np.swapaxes(x, -2, -3)  # (B, H, L, d)


def merge_heads(x):
    x = np.asarray(x)
    *lead, heads, length, d = x.shape
    x = np.swapaxes(x, -2, -3)  # (B, L, H, d): the transpose first, or heads mix positions
    return x.reshape(*lead, length, heads * d)  # (B, L, H*d)
