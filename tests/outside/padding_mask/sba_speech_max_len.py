"""`get_mask_from_lengths(lengths)` of a speech repository: max_len = max(lengths), ids = arange(max_len),
mask = ids < lengths[:, None] — the key count is the longest length, not a given number of keys.

Source: https://github.com/shinewide/sba_speech, utils.py (commit not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: NumPy in and out through torch (arange's `out=torch.LongTensor(max_len)` written as dtype=torch.long);
num_keys accepted and unused (the original has no such argument); (B,) lengths give (B, 1, ·) (a new axis);
(B, Lq) lengths passed as they are.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "padding_mask",
    "source": "shinewide/sba_speech utils.py get_mask_from_lengths",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "the mask has max(lengths) key columns, not num_keys: whenever no length equals Lk the shape is wrong (num_keys is never used).",
    "named": [r"num_keys|max\(lengths\)|longest|key count|Lk columns"],
    "false": [r"invers|negat", r"dtype|not bool"],
}


def get_mask_from_lengths(lengths):
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, dtype=torch.long)
    mask = (ids < lengths.unsqueeze(1)).bool()
    return mask


def padding_mask(valid_lens, num_keys):
    lengths = torch.as_tensor(np.asarray(valid_lens))
    mask = get_mask_from_lengths(lengths).numpy()
    return mask[:, None, :] if lengths.ndim == 1 else mask
