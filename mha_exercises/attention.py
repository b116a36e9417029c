"""Chapter 1: scaled dot-product attention (NumPy).

Conventions (see CONTRACT.md): a mask is boolean, True means "may attend", and broadcasts
against the scores ``(..., Lq, Lk)``; a query whose keys are all masked gets all-zero
weights and a zero output; inputs are never modified; float32 stays float32.
"""
import math  # noqa: F401  (math.sqrt keeps float32 float32, see the hint)

import numpy as np

from .masking import masked_softmax  # noqa: F401  (chapter 2; use it for the `mask` argument)


def softmax(x, axis=-1):
    """Exercise ``softmax`` (chapter 1, section "A softmax that does not overflow").

    Numerically stable softmax of ``x`` along ``axis``: the result is non-negative and
    sums to one along ``axis``, with no overflow for logits as large as 1e4.

    Args:
        x: array of any shape, float32 or float64.
        axis: the axis to normalise over.

    Returns:
        An array of the same shape and float dtype as ``x``.
    """
    raise NotImplementedError("exercise `softmax`: implement it in mha_exercises/attention.py (chapter 1)")


def scaled_dot_product_attention(q, k, v, mask=None):
    """Exercise ``scaled_dot_product_attention`` (chapter 1, section "Scaled dot-product attention").

    ``weights = masked_softmax(q @ k^T / sqrt(d_k), mask)`` over the key axis, and
    ``out = weights @ v``.

    Args:
        q: queries ``(..., Lq, d_k)``.
        k: keys ``(..., Lk, d_k)``.
        v: values ``(..., Lk, d_v)``.
        mask: optional boolean array, True where query ``i`` may attend to key ``j``,
            broadcastable to ``(..., Lq, Lk)``. A fully masked query row gets zero weights.

    Returns:
        ``(out, weights)``: ``out (..., Lq, d_v)`` and ``weights (..., Lq, Lk)``, in the
        float dtype of ``q``.
    """
    raise NotImplementedError(
        "exercise `scaled_dot_product_attention`: implement it in mha_exercises/attention.py (chapter 1)"
    )
