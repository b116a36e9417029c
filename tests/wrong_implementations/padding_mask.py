"""`padding_mask`: classic bugs and correct alternatives."""
import numpy as np


def less_equal(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    mask = np.arange(num_keys) <= valid_lens[..., None]
    return mask[:, None, :] if valid_lens.ndim == 1 else mask


def marks_padding(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    mask = np.arange(num_keys) >= valid_lens[..., None]
    return mask[:, None, :] if valid_lens.ndim == 1 else mask


def no_query_axis(valid_lens, num_keys):
    return np.arange(num_keys) < np.asarray(valid_lens)[..., None]


def returns_ints(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    mask = (np.arange(num_keys) < valid_lens[..., None]).astype(int)
    return mask[:, None, :] if valid_lens.ndim == 1 else mask


def loops(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    lens = valid_lens[:, None] if valid_lens.ndim == 1 else valid_lens  # (B, 1) or (B, Lq)
    mask = np.zeros(lens.shape + (num_keys,), dtype=bool)
    for index in np.ndindex(lens.shape):
        mask[index][: lens[index]] = True
    return mask


def less_outer(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    if valid_lens.ndim == 1:
        valid_lens = valid_lens[:, None]
    return np.greater.outer(valid_lens, np.arange(num_keys))


WRONG = {
    less_equal: "`key <= valid_len`",
    marks_padding: "your mask is inverted",
    no_query_axis: "add the query axis",
    returns_ints: "expected a boolean mask",
}
CORRECT = [loops, less_outer]
