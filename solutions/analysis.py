"""Chapter 5 reference: attention entropy."""
import numpy as np


def attention_entropy(weights):
    w = np.asarray(weights)
    if not np.issubdtype(w.dtype, np.floating):
        w = w.astype(np.float64)
    # 0 log 0 = 0: take the log of 1 where the weight is zero.
    return -(w * np.log(np.where(w > 0, w, 1))).sum(axis=-1)  # (..., Lq)
