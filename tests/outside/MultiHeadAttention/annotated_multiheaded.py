"""`MultiHeadedAttention` of The Annotated Transformer: four nn.Linear(d_model, d_model) ("clones"),
mask.unsqueeze(1) for the heads, projections viewed (nbatches, -1, h, d_k) and transposed, the module's
`attention` (masked_fill(mask == 0, -1e9), softmax, dropout on p_attn), heads merged, the last linear.

Source: https://github.com/harvardnlp/annotated-transformer, the_annotated_transformer.py
`class MultiHeadedAttention` and `def attention` (commit not recorded).
Licence: MIT.
Adapter: the course's constructor (embed_dim, num_heads, dropout) mapped to (h, d_model, dropout); its four
linears named W_q, W_k, W_v, W_o (its forward reads them as the list self.linears); forward returns
(out, self.attn) (the original keeps p_attn in self.attn); kdim, vdim, bias and head_mask have no place in the
original and are accepted and unused; no from_torch (the original has none).
"""
import math

import torch
from torch import nn

OUTSIDE = {
    "exercise": "MultiHeadAttention",
    "source": "harvardnlp/annotated-transformer MultiHeadedAttention",
    "licence": "MIT",
    "verdict": "loses",
    "cause": "masked scores are -1e9 (fully masked rows uniform, not zero), kdim/vdim and bias=False are not supported (every projection is Linear(d_model, d_model) with bias), head_mask is ignored, the returned weights are after dropout, and there is no from_torch.",
    "named": [r"fully masked", r"kdim|vdim", r"head_mask", r"from_torch", r"bias=False|without (a )?bias|has a bias"],
    "false": [r"without the 1/sqrt|not scaled", r"float64 for float32"],
}


def _annotated_attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__()
        h, d_model = num_heads, embed_dim
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)
        self.num_heads, self.head_dim = h, self.d_k

    @property
    def linears(self):
        return [self.W_q, self.W_k, self.W_v, self.W_o]

    def forward(self, query, key, value, mask=None, head_mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, self.attn = _annotated_attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x), self.attn
