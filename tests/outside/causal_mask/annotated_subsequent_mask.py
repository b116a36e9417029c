"""`subsequent_mask` of The Annotated Transformer: triu(ones(1, size, size), k=1) == 0.

Source: https://github.com/harvardnlp/annotated-transformer, the_annotated_transformer.py
`def subsequent_mask(size)` (commit not recorded).
Licence: MIT.
Adapter: NumPy out, the leading axis of 1 dropped ([0]); the original takes one size: the number of
queries is passed (num_keys is not used by it).
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "causal_mask",
    "source": "harvardnlp/annotated-transformer subsequent_mask",
    "licence": "MIT",
    "verdict": "loses",
    "failing": r"Lq < Lk|Lq > Lk|one query",
    "cause": "it builds a square (Lq, Lq) mask from one size: num_keys is ignored, so Lq != Lk gets the wrong shape.",
    "named": [r"num_keys|square|\(Lq, Lq\)|ignor\w+ .*keys|Lq != Lk|Lq ≠ Lk"],
    "false": [r"invers|negat", r"off by one|diagonal", r"dtype|not bool"],
}


def subsequent_mask(size):
    attn_shape = (1, size, size)
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return subsequent_mask == 0


def causal_mask(num_queries, num_keys=None):
    return subsequent_mask(num_queries)[0].numpy()
