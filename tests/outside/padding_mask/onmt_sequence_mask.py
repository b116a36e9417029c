"""`sequence_mask` from OpenNMT-py as copied into DeepMatcher: arange(max_len).repeat(B, 1).lt(lengths[:, None]).

Source: https://github.com/anhaidgroup/deepmatcher, deepmatcher/models/utils.py `sequence_mask`
("From onmt-py"; commit not recorded).
Licence: BSD-3-Clause (DeepMatcher); OpenNMT-py is MIT.
Adapter: NumPy in and out through torch; (B,) lengths give (B, 1, Lk) (a new axis); for (B, Lq)
lengths the original is applied to the flattened lengths and reshaped (its own use: one row per length).
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "padding_mask",
    "source": "anhaidgroup/deepmatcher deepmatcher/models/utils.py sequence_mask (from OpenNMT-py)",
    "licence": "BSD-3-Clause / MIT",
    "verdict": "full",
    "cause": "correct: True where the key index is below the length, booleans.",
    "named": [],
    "false": [],
}


def sequence_mask(lengths, max_len=None):
    batch_size = lengths.numel()
    max_len = max_len or lengths.max()
    return (torch.arange(0, max_len).type_as(lengths).repeat(batch_size, 1).lt(
        lengths.unsqueeze(1)))


def padding_mask(valid_lens, num_keys):
    lengths = torch.as_tensor(np.asarray(valid_lens))
    mask = sequence_mask(lengths.reshape(-1), num_keys).reshape(*lengths.shape, num_keys).numpy()
    return mask[:, None, :] if lengths.ndim == 1 else mask
