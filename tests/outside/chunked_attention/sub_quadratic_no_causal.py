"""Birch-san's sub-quadratic attention as shipped in Stable Diffusion web UIs (modules/sub_quadratic_attention.py):
per key chunk, baddbmm(q, k^T, alpha=scale), the chunk max, exp(scores - max), the chunk's exp @ v and
exp sum; the chunks' results stacked and combined with exp(chunk max - overall max).

Source: https://github.com/tenebo/SD-UI, modules/sub_quadratic_attention.py (`_summarize_chunk`,
`_query_chunk_attention`; from AUTOMATIC1111's stable-diffusion-webui, after Birch-san's
"sub-quadratic attention"; commit not recorded).
Licence: MIT (Birch-san's sub-quadratic attention) / AGPL-3.0 (the web UI).
Adapter: leading axes flattened to the original's (batch * heads, tokens, channels) and restored;
kv_chunk_size = chunk_size, one query chunk; `causal` accepted and unused (the original has no masking at all).
"""
import math

import torch

OUTSIDE = {
    "exercise": "chunked_attention",
    "source": "tenebo/SD-UI modules/sub_quadratic_attention.py (Birch-san sub-quadratic attention)",
    "licence": "MIT / AGPL-3.0",
    "verdict": "loses",
    "failing": r"causal",
    "cause": "it has no causal masking (with causal=True every query still attends to every key), and it keeps every chunk's exp weights and values until the end (torch.stack over chunks), as much memory as the full score matrix.",
    "named": [r"causal (is |flag )?(ignored|not applied|has no effect)|ignor\w+ (the )?causal|without (the )?causal|not causal", r"memory|score matrix"],
    "false": [r"float32|dtype", r"chunk_size (does not|that does not) divide|divid\w+ Lk"],
}


def _summarize_chunk(query, key, value, scale):
    attn_weights = torch.baddbmm(torch.zeros(1, 1, 1, dtype=query.dtype), query, key.transpose(1, 2),
                                 alpha=scale, beta=0)
    max_score, _ = torch.max(attn_weights, -1, keepdim=True)
    max_score = max_score.detach()
    exp_weights = torch.exp(attn_weights - max_score)
    exp_values = torch.bmm(exp_weights, value)
    return exp_values, exp_weights.sum(dim=-1), max_score.squeeze(-1)


def _query_chunk_attention(query, key, value, kv_chunk_size, scale):
    tokens = key.shape[1]
    chunks = [_summarize_chunk(query, key[:, i:i + kv_chunk_size], value[:, i:i + kv_chunk_size], scale)
              for i in range(0, tokens, kv_chunk_size)]
    chunk_values, chunk_weights, chunk_max = map(torch.stack, zip(*chunks))
    global_max, _ = torch.max(chunk_max, 0, keepdim=True)
    max_diffs = torch.exp(chunk_max - global_max)
    chunk_values = chunk_values * max_diffs.unsqueeze(-1)
    chunk_weights = chunk_weights * max_diffs
    all_values = chunk_values.sum(dim=0)
    all_weights = chunk_weights.unsqueeze(-1).sum(dim=0)
    return all_values / all_weights


def chunked_attention(q, k, v, chunk_size, causal=False):
    lead = q.shape[:-2]
    flat = lambda t: t.reshape(-1, t.shape[-2], t.shape[-1])
    out = _query_chunk_attention(flat(q), flat(k), flat(v), chunk_size, 1 / math.sqrt(q.shape[-1]))
    return out.reshape(*lead, q.shape[-2], v.shape[-1])
