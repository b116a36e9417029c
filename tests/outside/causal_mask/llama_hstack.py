"""The causal mask of Meta's LLaMA reference code (llama/model.py, Transformer.forward): a (seqlen,
seqlen) triu of -inf, with `start_pos` zero columns stacked in front for the cached keys; None when
seqlen == 1.

Source: https://github.com/meta-llama/llama, llama/model.py, `Transformer.forward` (commit
57b0eb62de0636e75af471e49e2f1862d908d9d8 as cited by thelonejordan/deeplearning.scratchpad).
Licence: LLaMA 2 Community License (code reproduced for testing with attribution).
Adapter: start_pos = num_keys - num_queries (its cache length); the additive mask (0 / -inf) turned
into the course's boolean (== 0), None into all True; NumPy out.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "causal_mask",
    "source": "meta-llama/llama llama/model.py Transformer.forward mask",
    "licence": "LLaMA 2 Community License",
    "verdict": "loses",
    "failing": r"Lq > Lk",
    "cause": "with more queries than keys its cache length start_pos is negative and torch.zeros((seqlen, start_pos)) raises.",
    "named": [r"more queries than keys|Lq > Lk|negative"],
    "false": [r"invers|negat(ed|ion)", r"assumes a square|only square", r"dtype|not bool", r"fails (on|with) Lq < Lk|with Lq < Lk it raises"],
}


def _llama_mask(seqlen, start_pos):
    mask = None
    if seqlen > 1:
        mask = torch.full((seqlen, seqlen), float("-inf"))
        mask = torch.triu(mask, diagonal=1)
        mask = torch.hstack([torch.zeros((seqlen, start_pos)), mask])
    return mask


def causal_mask(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    mask = _llama_mask(num_queries, num_keys - num_queries)
    return np.ones((num_queries, num_keys), dtype=bool) if mask is None else (mask == 0).numpy()
