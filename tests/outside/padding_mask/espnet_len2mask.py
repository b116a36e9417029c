"""`len2mask` of ESPnet (AMI diarization recipe): arange(max_len).expand(B, max_len) < length[:, None],
then cast to the *lengths'* dtype.

Source: https://github.com/espnet/espnet, egs3/ami/diar1/local/utils.py `len2mask(length, max_len=None,
dtype=None)` (commit not recorded).
Licence: Apache-2.0 (ESPnet).
Adapter: NumPy in and out through torch; (B,) lengths give (B, 1, Lk) as the course asks (a new axis);
(B, Lq) lengths are passed to the original as they are (it handles 1-D lengths only).
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "padding_mask",
    "source": "espnet/espnet egs3/ami/diar1/local/utils.py len2mask",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "cause": "the mask is cast to the lengths' integer dtype (0/1 ints, not booleans), and 2-D (B, Lq) lengths are not supported (expand fails).",
    "named": [r"not bool|bool(ean)? expected|int64|integer|dtype", r"\(B, Lq\)|2-D|two-dimensional|per query"],
    "false": [r"inverse|negat|True where .*pad", r"off by one|<=|at most"],
}


def len2mask(length, max_len=None, dtype=None):
    if max_len is None:
        max_len = length.max().long().item()
    mask = torch.arange(max_len, device=length.device, dtype=length.dtype).expand(
        len(length), max_len) < length.unsqueeze(1)
    if dtype is None:
        dtype = length.dtype
    mask = torch.as_tensor(mask, dtype=dtype, device=length.device)
    return mask


def padding_mask(valid_lens, num_keys):
    lengths = torch.as_tensor(np.asarray(valid_lens))
    mask = len2mask(lengths, num_keys).numpy()
    return mask[:, None, :] if lengths.ndim == 1 else mask
