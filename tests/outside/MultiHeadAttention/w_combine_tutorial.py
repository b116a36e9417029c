"""The `MultiHeadAttention` of a widely copied PyTorch tutorial (w_q, w_k, w_v, w_combine; q, k and v all
viewed as (batch, time, n_head, n_d) with `time` read from q; masked_fill(mask == 0, -10000); softmax @ v;
permute, contiguous, view(batch, time, dimension); w_combine).

Source: public repositories found through the public-code index (several copies of the same tutorial class,
e.g. one ending with `out = attention(x, x, x); print(out)`; repository names not shown by the index; commit
not recorded).
Licence: unknown (tutorial code; reproduced for testing; no redistribution beyond this test corpus intended).
Adapter: the course's constructor (embed_dim, num_heads) for (d_model, n_head); w_q, w_k, w_v, w_combine named
W_q, W_k, W_v, W_o; forward returns (out, None): the original computes the weights inline and keeps none;
kdim, vdim, bias, dropout and head_mask are accepted and unused (the original has none); no from_torch.
"""
import math

import torch
from torch import nn

OUTSIDE = {
    "exercise": "MultiHeadAttention",
    "source": "widely copied tutorial MultiHeadAttention (w_combine), repositories not shown by the index",
    "licence": "unknown",
    "verdict": "loses",
    "cause": "k and v are viewed with the query's length (Lq != Lk raises), masking subtracts a finite 10000 (fully masked rows uniform), the weights are not returned, and kdim/vdim, bias=False, head_mask and from_torch are not supported.",
    "named": [r"assumes Lq = Lk|query('s)? length", r"fully masked|10000", r"weights (is|are) None|no weights|NoneType", r"kdim|vdim|head_mask|from_torch|bias=False"],
    "false": [r"without the 1/sqrt|not scaled", r"float64 for float32"],
}


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.d_model = embed_dim
        self.W_q = nn.Linear(embed_dim, embed_dim)
        self.W_k = nn.Linear(embed_dim, embed_dim)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)
        self.softmax = nn.Softmax(dim=-1)
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads

    def forward(self, query, key, value, mask=None, head_mask=None):
        batch, time, dimension = query.shape
        n_d = self.d_model // self.n_head
        q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)
        q = q.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
        k = k.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
        v = v.view(batch, time, self.n_head, n_d).permute(0, 2, 1, 3)
        score = q @ k.transpose(2, 3) / math.sqrt(n_d)
        if mask is not None:
            score = score.masked_fill(mask == 0, -10000)
        score = self.softmax(score) @ v
        score = score.permute(0, 2, 1, 3).contiguous().view(batch, time, dimension)
        return self.W_o(score), None
