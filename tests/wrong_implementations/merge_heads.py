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


def swapped_with_features(x):
    B, H, L, d = x.shape
    return np.swapaxes(x, -1, -3).reshape(B, L, H * d)


def four_axes_only(x):
    B, H, L, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * d)


def concatenate(x):
    return np.concatenate([x[..., h, :, :] for h in range(x.shape[-3])], axis=-1)


def einsum_then_reshape(x):
    *lead, H, L, d = x.shape
    return np.einsum("...hld->...lhd", x).reshape(*lead, L, H * d)


WRONG = {
    reshape_only: "without the transpose",
    interleaved: "interleaves the heads' features",
    summed: "sums the heads",
    swapped_with_features: "swapaxes(-1, -3)",
    four_axes_only: "differ only in the leading axes",
}
CORRECT = [concatenate, einsum_then_reshape]
