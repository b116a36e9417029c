"""`softmax`: three classic bugs and three correct alternatives."""
import numpy as np


def naive(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def ignores_axis(x, axis=-1):
    x = x - np.max(x, axis=-1, keepdims=True)
    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)


def global_max(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


def global_sum(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e)


def log_sum_exp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)


def float64_internals(x, axis=-1):
    y = np.asarray(x, dtype=np.float64)
    e = np.exp(y - y.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def row_loop(x, axis=-1):
    moved = np.moveaxis(x, axis, -1)
    out = np.empty_like(moved)
    for index in np.ndindex(moved.shape[:-1]):
        row = moved[index]
        e = np.exp(row - row.max())
        out[index] = e / e.sum()
    return np.moveaxis(out, -1, axis)


def sums_axis_0(x, axis=-1):
    # As pluu2/MLhelper's attention.py writes it: normalised over axis 0, whatever `axis`.
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


WRONG = {
    naive: "without subtracting the max",
    ignores_axis: "over the last axis whatever `axis` says",
    global_max: "max of the whole array",
    global_sum: "sum of the whole array",
    sums_axis_0: "over axis 0 whatever `axis` says",
}
CORRECT = [log_sum_exp, float64_internals, row_loop]
