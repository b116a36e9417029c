"""The causal mask of Hugging Face's GPT-2 attention (`GPT2Attention._attn`): a registered
tril(ones(max_positions, max_positions)) buffer, sliced bias[key_length - query_length : key_length, :key_length].

Source: https://github.com/huggingface/transformers, src/transformers/models/gpt2/modeling_gpt2.py
(v4.30-era `GPT2Attention.__init__` and `_attn`; commit not recorded).
Licence: Apache-2.0.
Adapter: the buffer built at GPT-2's n_positions = 1024 without the (1, 1) leading axes; NumPy out.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "causal_mask",
    "source": "huggingface/transformers models/gpt2/modeling_gpt2.py GPT2Attention causal mask",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"Lq > Lk",
    "cause": "with more queries than keys the slice start key_length - query_length is negative and wraps to the buffer's end: rows of the wrong positions and the wrong count.",
    "named": [r"more queries than keys|Lq > Lk|negative"],
    "false": [r"invers|negat(ed|ion)", r"dtype|not bool", r"fails (on|with) Lq < Lk|with Lq < Lk it raises"],
}

_MAX_POSITIONS = 1024
_BIAS = torch.tril(torch.ones((_MAX_POSITIONS, _MAX_POSITIONS), dtype=torch.bool))


def causal_mask(num_queries, num_keys=None):
    query_length = num_queries
    key_length = num_queries if num_keys is None else num_keys
    causal = _BIAS[key_length - query_length: key_length, :key_length]
    return causal.numpy()
