"""Chapter 5: looking at heads."""
import numpy as np


def attention_entropy(weights):
    """Exercise ``attention_entropy`` (chapter 5, section "Sharp and diffuse heads").

    Entropy in nats of each query's attention distribution, with ``0 log 0 = 0`` (so a
    fully masked, all-zero row has entropy 0).

    Args:
        weights: NumPy array ``(..., Lq, Lk)``, rows summing to 1 (or all zero).

    Returns:
        ``(..., Lq)``, same float dtype as ``weights``.
    """
    raise NotImplementedError("exercise `attention_entropy`: implement it in mha_exercises/analysis.py (chapter 5)")
