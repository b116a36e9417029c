"""Why a used exercise, answered by the reference, cannot take the learner's arguments, in the
learner's words: what their call passed and what it lacks ("the mask (2, 4, 5) needs a head
axis: (B, 1, Lq, Lk)"), never "the reference raised". The runner's proxy answerer uses it."""
from __future__ import annotations

import numpy as np


def _shape(x):
    try:
        return tuple(int(n) for n in np.shape(x))
    except Exception:
        return None


def _broadcasts(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _mask_words(mask, scores) -> str | None:
    """What is wrong with a mask that does not broadcast against scores ``(..., Lq, Lk)``."""
    shape = _shape(mask)
    if shape is None or scores is None or _broadcasts(shape, scores):
        return None
    if len(shape) == 3 and len(scores) == 4 and _broadcasts((shape[0], 1) + shape[1:], scores):
        rows = "Lq" if shape[1] == scores[2] else "1"  # a (B, 1, Lk) padding mask, or (B, Lq, Lk)
        return (f"the mask {shape} = (B, {rows}, Lk) needs a head axis: (B, 1, {rows}, Lk), e.g. mask[:, None], "
                f"to broadcast against the scores {scores} = (B, H, Lq, Lk)")
    if (len(shape) == 4 == len(scores) and shape[0] == 1 and shape[1] == scores[0]
            and _broadcasts((shape[1], 1) + shape[2:], scores)):  # (1, B, ., Lk): the head axis in front
        return (f"the mask {shape} has its size-1 axis first and an axis of size B = {scores[0]} second, where the "
                f"scores {scores} = (B, H, Lq, Lk) have the heads: a mask shared by the heads gets its head axis "
                f"after the batch axis, (B, 1, {'Lq' if shape[2] == scores[2] else '1'}, Lk), e.g. mask[:, None]")
    return f"the mask {shape} does not broadcast against the scores {scores} = (..., Lq, Lk)"


def _attention_words(q, k, v, mask=None) -> str | None:
    sq, sk, sv = _shape(q), _shape(k), _shape(v)
    if None in (sq, sk, sv) or min(len(sq), len(sk), len(sv)) < 2:
        return None
    if sq[-1] != sk[-1]:
        return (f"q {sq} has {sq[-1]} features per position and k {sk} has {sk[-1]}: the scores q @ k^T need "
                "the same d_k")
    if sk[-2] != sv[-2]:
        return f"k {sk} has {sk[-2]} positions and v {sv} has {sv[-2]}: each key needs its value (the same Lk)"
    try:
        scores = np.broadcast_shapes(sq[:-2], sk[:-2]) + (sq[-2], sk[-2])
    except ValueError:
        return f"the leading axes of q {sq} and k {sk} do not broadcast (batch and head axes must agree)"
    return _mask_words(mask, scores) if mask is not None else None


def describe_rejected(name: str, args: list, kwargs: dict, err: BaseException) -> str:
    """One clause: what the learner's call to ``name`` passed that it cannot take."""
    words = None
    try:
        if name == "scaled_dot_product_attention":
            params = dict(zip(("q", "k", "v", "mask"), args), **kwargs)
            if {"q", "k", "v"} <= set(params):
                words = _attention_words(params["q"], params["k"], params["v"], params.get("mask"))
        elif name == "masked_softmax":
            params = dict(zip(("scores", "mask"), args), **kwargs)
            if "scores" in params and params.get("mask") is not None:
                words = _mask_words(params["mask"], _shape(params["scores"]))
        elif name == "split_heads":
            params = dict(zip(("x", "num_heads"), args), **kwargs)
            shape, heads = _shape(params.get("x")), params.get("num_heads")
            if shape and isinstance(heads, int) and heads > 0 and shape[-1] % heads:
                words = f"x {shape} has {shape[-1]} features, which do not split into {heads} heads"
    except Exception:  # hostile or malformed arguments: say what the reference said
        words = None
    if words:
        return words
    shapes = ", ".join(str(_shape(a)) for a in args if _shape(a))
    return f"{type(err).__name__}: {err}" + (f" (your arguments' shapes: {shapes})" if shapes else "")
