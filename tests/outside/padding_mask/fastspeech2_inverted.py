"""`get_mask_from_lengths` of a FastSpeech 2 implementation: ids >= lengths, i.e. True at *padding*
(the convention of nn.MultiheadAttention's key_padding_mask).

Source: https://github.com/johanDDC/fastspeech2, src/model/utils/utils.py `get_mask_from_lengths`
(commit not recorded).
Licence: none stated in the repository (reproduced for testing with attribution).
Adapter: NumPy in and out through torch; (B,) lengths give (B, 1, Lk) (a new axis); (B, Lq) lengths
passed to the original as they are.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "padding_mask",
    "source": "johanDDC/fastspeech2 src/model/utils/utils.py get_mask_from_lengths",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "True marks padding (ids >= length), the inverse of the course's True = may attend; 2-D lengths also fail.",
    "named": [r"invert|invers|negat|opposite|True (where|at|marks) .*pad|flipped|logical not|~"],
    "false": [r"off by one", r"dtype|not bool"],
}


def get_mask_from_lengths(lengths, max_len=None):
    batch_size = lengths.shape[0]
    if max_len is None:
        max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, device=lengths.device).unsqueeze(0).expand(batch_size, -1)
    mask = ids >= lengths.unsqueeze(1).expand(-1, max_len)
    return mask


def padding_mask(valid_lens, num_keys):
    lengths = torch.as_tensor(np.asarray(valid_lens))
    mask = get_mask_from_lengths(lengths, num_keys).numpy()
    return mask[:, None, :] if lengths.ndim == 1 else mask
