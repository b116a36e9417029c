"""The masking of a public PyTorch attention module: masked scores filled with -inf, rows with no allowed key
filled with 0 before the softmax, and the weights at masked keys set back to 0 after it.

Source: a public repository found through the public-code index (a `MultiHeadAttention(d_model, n_head,
dropout)` module whose attention function computes `fully_masked = ~allowed.any(dim=-1, keepdim=True)`;
repository name not shown by the index; commit not recorded).
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: NumPy in and out through torch; the boolean mask broadcast to the scores.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "masked_softmax",
    "source": "public attention module with a fully-masked-row guard (name not shown by the index)",
    "licence": "unknown",
    "verdict": "full",
    "cause": "correct: -inf fill, fully masked rows zeroed, masked weights exactly 0.",
    "named": [],
    "false": [],
}


def masked_softmax(scores, mask):
    scores = torch.from_numpy(np.asarray(scores))
    if mask is None:
        return torch.softmax(scores, dim=-1).numpy()
    allowed = torch.from_numpy(np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape).copy())
    fully_masked = ~allowed.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~allowed, float("-inf"))
    scores = scores.masked_fill(fully_masked, 0.0)
    attention_weights = torch.softmax(scores, dim=-1)
    attention_weights = attention_weights.masked_fill(~allowed, 0.0)
    return attention_weights.numpy()
