"""The `GQA` module of a public instruct-model study repository: query Linear(d_model, d_model), key and value
Linear(d_model, num_kv_groups * head_dim), torch.repeat_interleave of K and V over the head axis, softmax,
merge, out_proj — written with the *globals* `head_dim` and `num_kv_groups` in forward.

Source: https://github.com/HuichuanLI/play-with-instruct-model, big_model/GQA.py (commit not recorded).
Licence: none stated in the file (reproduced for testing with attribution).
Adapter: the course's constructor (embed_dim, num_heads, num_kv_heads, bias) mapped to (d_model,
head_dim = embed_dim // num_heads, num_q_heads, num_kv_groups); query, key, val, out_proj named W_q, W_k,
W_v, W_o; forward(x, mask, causal, cache): the original takes x only (mask, causal and cache unused).
The merge line of the original is cut off in the index ("... .view(batch_size, seq_len, n"): completed as
view(batch_size, seq_len, self.d_model).
"""
import math

import torch
import torch.nn as nn

OUTSIDE = {
    "exercise": "GroupedQueryAttention",
    "source": "HuichuanLI/play-with-instruct-model big_model/GQA.py",
    "licence": "none stated",
    "verdict": "loses",
    "cause": "forward reads head_dim and num_kv_groups as module globals, not self.head_dim / self.num_kv_groups (NameError on every call where no such globals exist); it also has no mask, no causal masking and no cache.",
    "named": [r"NameError|head_dim.* (is )?not defined|undefined"],
    "false": [r"repeat_kv (order|interleav)|heads? (order|interleaved) wrong", r"float64 for float32"],
}


class GroupedQueryAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__()
        d_model, head_dim, num_q_heads, num_kv_groups = embed_dim, embed_dim // num_heads, num_heads, num_kv_heads
        self.d_model = d_model
        self.head_dim = head_dim
        self.num_kv_groups = num_kv_groups
        self.num_q_heads = num_q_heads
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        assert num_q_heads % num_kv_groups == 0, "num_q_heads must be divisible by num_kv_groups"
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, num_kv_groups * head_dim)
        self.W_v = nn.Linear(d_model, num_kv_groups * head_dim)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x, mask=None, causal=False, cache=None):
        batch_size, seq_len, _ = x.size()
        Q = self.W_q(x)
        K = self.W_k(x)
        V = self.W_v(x)
        Q = Q.view(batch_size, seq_len, self.num_q_heads, head_dim).transpose(1, 2)  # noqa: F821  (the original's global)
        K = K.view(batch_size, seq_len, self.num_kv_groups, self.head_dim).transpose(1, 2)
        K = torch.repeat_interleave(K, self.num_q_heads // self.num_kv_groups, 1)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(head_dim)  # noqa: F821
        V = V.view(batch_size, seq_len, num_kv_groups, head_dim).transpose(1, 2)  # noqa: F821
        V = torch.repeat_interleave(V, self.num_q_heads // self.num_kv_groups, 1)
        scores = torch.softmax(scores, dim=-1)
        attn_out = torch.matmul(scores, V)
        attn_out = attn_out.transpose(1, 2).contiguous().view(batch_size, seq_len, self.d_model)
        return self.W_o(attn_out)
