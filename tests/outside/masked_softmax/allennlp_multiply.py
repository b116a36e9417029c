"""AllenNLP's `masked_softmax` (memory_efficient=False): softmax(vector * mask), times the mask,
renormalised by the sum plus a tiny value.

Source: https://github.com/allenai/allennlp, allennlp/nn/util.py `masked_softmax` (v2.x; commit not recorded).
Licence: Apache-2.0.
Adapter: NumPy in and out through torch; the mask unsqueezed to the vector's rank as the original does.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "masked_softmax",
    "source": "allenai/allennlp allennlp/nn/util.py masked_softmax (memory_efficient=False)",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"1e4|±100",
    "cause": "masked scores become 0 (vector * mask) and still enter the softmax: when the unmasked scores are far below 0 they underflow next to those zeros and the row collapses to ~0 after renormalising; and a 2-D (Lq, Lk) mask on 4-D scores is unsqueezed at axis 1 (AllenNLP assumes a batch-first mask), so it does not broadcast.",
    "named": [r"vector \* mask|multipl\w+ .*mask|masked (scores|entries) (set to|become|as) 0|zero(ed)? scores"],
    "false": [r"fully masked", r"overflow", r"float64 for float32"],
}


def _tiny_value_of_dtype(dtype):
    if dtype == torch.float16:
        return 1e-4
    return 1e-13


def _allennlp_masked_softmax(vector, mask, dim=-1):
    if mask is None:
        return torch.nn.functional.softmax(vector, dim=dim)
    while mask.dim() < vector.dim():
        mask = mask.unsqueeze(1)
    result = torch.nn.functional.softmax(vector * mask, dim=dim)
    result = result * mask
    result = result / (result.sum(dim=dim, keepdim=True) + _tiny_value_of_dtype(result.dtype))
    return result


def masked_softmax(scores, mask):
    vector = torch.from_numpy(np.asarray(scores))
    m = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=bool))
    return _allennlp_masked_softmax(vector, m).numpy()
