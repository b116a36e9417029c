"""Chapter 3: splitting and merging heads (NumPy)."""
import numpy as np


def split_heads(x, num_heads):
    """Exercise ``split_heads`` (chapter 3, section "Splitting the features into heads").

    ``(B, L, H*d) -> (B, H, L, d)``: head ``h`` holds features ``h*d:(h+1)*d``. Any number
    of leading axes: ``(..., L, H*d) -> (..., H, L, d)``. ``x`` is left unchanged.

    Args:
        x: ``(..., L, H*d)``.
        num_heads: ``H``; raise ``ValueError`` when it does not divide the last axis.

    Returns:
        ``(..., H, L, d)``, same dtype as ``x``.
    """
    raise NotImplementedError("exercise `split_heads`: implement it in mha_exercises/heads.py (chapter 3)")


def merge_heads(x):
    """Exercise ``merge_heads`` (chapter 3, section "Merging the heads back").

    ``(B, H, L, d) -> (B, L, H*d)``, the inverse of ``split_heads``: head ``h`` fills features
    ``h*d:(h+1)*d``. Any number of leading axes: ``(..., H, L, d) -> (..., L, H*d)``; same
    dtype as ``x``, which is left unchanged.
    """
    raise NotImplementedError("exercise `merge_heads`: implement it in mha_exercises/heads.py (chapter 3)")
