"""The masking of Hugging Face's BERT before v4.21: an additive extended mask (1.0 - mask) * -10000.0
added to the scores, then softmax.

Source: https://github.com/huggingface/transformers, src/transformers/modeling_utils.py
`get_extended_attention_mask` (`(1.0 - extended_attention_mask) * -10000.0`) with BertSelfAttention's
`attention_scores + attention_mask; nn.functional.softmax(...)` (v4.20; commit not recorded).
Licence: Apache-2.0.
Adapter: NumPy in and out through torch; the boolean mask cast to the scores' dtype as the original does.
"""
import numpy as np
import torch

OUTSIDE = {
    "exercise": "masked_softmax",
    "source": "huggingface/transformers v4.20 get_extended_attention_mask + BertSelfAttention",
    "licence": "Apache-2.0",
    "verdict": "loses",
    "failing": r"fully masked|1e4|±100",
    "cause": "masking subtracts a finite 10000 instead of excluding: masked scores at 3e4 still win, and a fully masked row comes out uniform.",
    "named": [r"-10000|10000|finite (penalty|offset)|subtract\w* a (large|finite)|additive", r"fully masked"],
    "false": [r"overflow", r"float64 for float32", r"in place", r"Correct on float32; fails on float64"],
}


def masked_softmax(scores, mask):
    attention_scores = torch.from_numpy(np.asarray(scores))
    if mask is not None:
        extended_attention_mask = torch.from_numpy(np.asarray(mask, dtype=bool)).to(dtype=attention_scores.dtype)
        extended_attention_mask = (1.0 - extended_attention_mask) * -10000.0
        attention_scores = attention_scores + extended_attention_mask
    attention_probs = torch.nn.functional.softmax(attention_scores, dim=-1)
    return attention_probs.numpy()
