"""AllenNLP's `masked_softmax` with memory_efficient=True: masked_fill(~mask, min value of the dtype), softmax.

Source: https://github.com/allenai/allennlp, allennlp/nn/util.py `masked_softmax` (v2.x; commit not recorded).
Licence: Apache-2.0.
Adapter: NumPy in and out through torch; the mask unsqueezed to the vector's rank as the original does.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "masked_softmax",
    "source": "allenai/allennlp allennlp/nn/util.py masked_softmax (memory_efficient=True)",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"fully masked",
    "cause": "masked scores are filled with the dtype's minimum, not excluded: a fully masked row comes out uniform instead of zeros; and a 2-D (Lq, Lk) mask on 4-D scores is unsqueezed at axis 1 (AllenNLP assumes a batch-first mask), so it does not broadcast.",
    "named": [r"fully masked", r"uniform|finfo|min(imum)? (finite )?value|large negative"],
    "false": [r"overflow", r"float64 for float32", r"in place"],
}


def _allennlp_masked_softmax(vector, mask, dim=-1):
    if mask is None:
        return torch.nn.functional.softmax(vector, dim=dim)
    while mask.dim() < vector.dim():
        mask = mask.unsqueeze(1)
    masked_vector = vector.masked_fill(~mask, torch.finfo(vector.dtype).min)
    return torch.nn.functional.softmax(masked_vector, dim=dim)


def masked_softmax(scores, mask):
    vector = torch.from_numpy(np.asarray(scores))
    m = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=bool))
    return _allennlp_masked_softmax(vector, m).numpy()
