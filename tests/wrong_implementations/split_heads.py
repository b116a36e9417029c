"""`split_heads`: classic bugs and correct alternatives."""
import numpy as np


def reshape_only(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, num_heads, L, F // num_heads)


def heads_last(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, L, -1, num_heads).transpose(0, 3, 1, 2)


def wrong_transpose(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, L, num_heads, -1).transpose(0, 2, 3, 1)


def stack_slices(x, num_heads):
    if x.shape[-1] % num_heads:
        raise ValueError("num_heads must divide the features")
    d = x.shape[-1] // num_heads
    return np.stack([x[..., h * d:(h + 1) * d] for h in range(num_heads)], axis=-3)


def moveaxis(x, num_heads):
    *lead, L, F = x.shape
    return np.moveaxis(x.reshape(*lead, L, num_heads, F // num_heads), -2, -3).copy()


def three_axes_only(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, L, num_heads, F // num_heads).transpose(0, 2, 1, 3)


def truncating_split(x, num_heads):
    d = x.shape[-1] // num_heads
    return np.stack([x[..., h * d:(h + 1) * d] for h in range(num_heads)], axis=-3)


def view_without_transpose(x, num_heads):
    # The xformers variant of CLIP's _shape: view(B, L, H, d), no transpose.
    B, L, F = x.shape
    return x.reshape(B, L, num_heads, F // num_heads)


WRONG = {
    reshape_only: "without the transpose",
    heads_last: "heads from the wrong axis",
    wrong_transpose: "(B, H, d, L)",
    view_without_transpose: "(B, L, H, d)",
    three_axes_only: "differ only in the leading axes",
    truncating_split: "raise ValueError",
}
CORRECT = [stack_slices, moveaxis]
