"""Chapter 2: masking (NumPy).

A mask is boolean and True means "may attend" (as in
``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention``'s
``key_padding_mask`` uses the opposite). It broadcasts against the scores ``(..., Lq, Lk)``.
"""
import numpy as np


def padding_mask(valid_lens, num_keys):
    """Exercise ``padding_mask`` (chapter 2, section "Padding masks").

    True where the key index is below the valid length.

    Args:
        valid_lens: integer array, either ``(B,)`` (one length per sequence) or ``(B, Lq)``
            (one length per query).
        num_keys: ``Lk``, the number of key positions.

    Returns:
        Boolean array ``(B, 1, Lk)`` for ``(B,)`` lengths, ``(B, Lq, Lk)`` for ``(B, Lq)``.
    """
    raise NotImplementedError("exercise `padding_mask`: implement it in mha_exercises/masking.py (chapter 2)")


def causal_mask(num_queries, num_keys=None):
    """Exercise ``causal_mask`` (chapter 2, section "Look-ahead masks").

    Query ``i`` may see key ``j`` iff ``j <= i + (Lk - Lq)``: the queries are aligned to the
    *end* of the keys, as when new tokens attend to a KV cache.

    Args:
        num_queries: ``Lq``.
        num_keys: ``Lk``; defaults to ``Lq``.

    Returns:
        Boolean array ``(Lq, Lk)``.
    """
    raise NotImplementedError("exercise `causal_mask`: implement it in mha_exercises/masking.py (chapter 2)")


def masked_softmax(scores, mask):
    """Exercise ``masked_softmax`` (chapter 2, section "Masked softmax: your first version").

    Softmax over the last axis that ignores masked entries, with no overflow for scores as
    large as 1e4, masked ones included.

    Args:
        scores: ``(..., Lq, Lk)``, float32 or float64.
        mask: boolean, True where attending is allowed, broadcastable to ``scores``;
            ``None`` means no mask.

    Returns:
        Weights of the shape and dtype of ``scores``: masked entries exactly 0, every
        other row sums to 1, and a fully masked row is all zeros (never NaN, never a
        uniform average over padding).
    """
    raise NotImplementedError("exercise `masked_softmax`: implement it in mha_exercises/masking.py (chapter 2)")
