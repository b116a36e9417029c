"""`merge_heads`: classic bugs and correct alternatives."""
import numpy as np


def reshape_only(x):
    B, H, L, d = x.shape
    return x.reshape(B, L, H * d)


def interleaved(x):
    B, H, L, d = x.shape
    return np.transpose(x, (0, 2, 3, 1)).reshape(B, L, -1)


def summed(x):
    return x.sum(1)


def concatenate(x):
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)


def einsum_then_reshape(x):
    B, H, L, d = x.shape
    return np.einsum("bhld->blhd", x).reshape(B, L, H * d)


WRONG = {
    reshape_only: "without the transpose",
    interleaved: "interleaves the heads' features",
    summed: "sums the heads",
}
CORRECT = [concatenate, einsum_then_reshape]
