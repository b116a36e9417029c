"""Chapter 2 reference: masking (NumPy). True means "may attend"."""
import numpy as np


def padding_mask(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    if valid_lens.ndim not in (1, 2):
        raise ValueError(f"valid_lens must be (B,) or (B, Lq), got shape {valid_lens.shape}")
    keys = np.arange(num_keys)  # (Lk,)
    mask = keys < valid_lens[..., None]  # (B, Lk) or (B, Lq, Lk)
    return mask[:, None, :] if valid_lens.ndim == 1 else mask


def causal_mask(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    # Queries are the *last* Lq positions of the Lk keys: query i sits at i + (Lk - Lq).
    rows = np.arange(num_queries)[:, None] + (num_keys - num_queries)  # (Lq, 1)
    return np.arange(num_keys)[None, :] <= rows  # (Lq, Lk)


def masked_softmax(scores, mask):
    scores = np.asarray(scores)
    if not np.issubdtype(scores.dtype, np.floating):
        scores = scores.astype(np.float64)
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    row_max = np.where(mask, scores, -np.inf).max(axis=-1, keepdims=True)
    # A fully masked row has max -inf; shifting by 0 instead avoids -inf - -inf = NaN.
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.where(mask, np.exp(np.where(mask, scores - row_max, 0)), 0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)  # fully masked rows stay all zero
