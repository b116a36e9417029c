"""`shannon_entropy(attn)` of a public attention-analysis script: -sum(attn * log(attn), -1) / log(base),
with base = attn.shape[1] ("base is num_heads"), no guard for zeros.

Source: a public repository found through the public-code index (file opening `import math; import torch;
def shannon_entropy(attn: torch.Tensor)`, with `attention_spread` left unimplemented); repository name not
shown by the index, commit not recorded.
Licence: unknown (reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: NumPy in and out through torch.
"""
import math

import numpy as np
import torch

OUTSIDE = {
    "exercise": "attention_entropy",
    "source": "public attention-spread script (shannon_entropy), repository not shown by the index",
    "licence": "unknown",
    "verdict": "loses",
    "cause": "it divides by log(attn.shape[1]) (a normalised entropy in base 'number of heads', for 2-D input the query count), and 0 * log 0 gives NaN at zero weights.",
    "named": [r"divid\w+ by log|normali[sz]ed entropy|constant factor|log\(.*shape", r"0 log 0|NaN"],
    "false": [r"log2|bits"],
}


def shannon_entropy(attn: torch.Tensor):
    base = attn.shape[1]
    H = -torch.sum(attn * torch.log(attn), dim=-1) / math.log(base)
    return H


def attention_entropy(weights):
    return shannon_entropy(torch.from_numpy(np.asarray(weights))).numpy()
