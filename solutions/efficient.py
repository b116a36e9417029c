"""Chapter 7 reference: chunked attention, grouped-query attention, KV cache (PyTorch)."""
import math

import torch
from torch import nn


def causal_allowed(num_queries, num_keys, device=None, key_start=0, key_stop=None):
    """End-aligned causal mask, True = may attend: query ``i`` sees key ``j`` iff
    ``j <= i + (Lk - Lq)``. ``key_start:key_stop`` selects a slice of the key columns."""
    key_stop = num_keys if key_stop is None else key_stop
    rows = torch.arange(num_queries, device=device)[:, None] + (num_keys - num_queries)  # (Lq, 1)
    return torch.arange(key_start, key_stop, device=device)[None, :] <= rows  # (Lq, stop - start)


def attention(q, k, v, allowed=None):
    """Plain attention, the full ``(..., Lq, Lk)`` score matrix at once; fully masked rows give 0."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Lq, Lk)
    if allowed is None:
        return torch.softmax(scores, dim=-1) @ v  # (..., Lq, d_v)
    scores = scores.masked_fill(~allowed, float("-inf"))
    # A fully masked row has max -inf; shifting it by 0 instead keeps -inf - -inf out.
    row_max = scores.amax(dim=-1, keepdim=True).clamp(min=torch.finfo(scores.dtype).min)
    e = torch.exp(scores - row_max)  # masked entries: exp(-inf) = 0
    total = e.sum(dim=-1, keepdim=True)
    return (e / total.clamp(min=torch.finfo(e.dtype).tiny)) @ v  # all-zero rows stay zero


def chunked_attention(q, k, v, chunk_size, causal=False):
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    # Running statistics per query: max m, denominator l, and the unnormalised output acc.
    m = torch.full((*q.shape[:-1], 1), float("-inf"), dtype=q.dtype, device=q.device)  # (..., Lq, 1)
    l = torch.zeros_like(m)  # (..., Lq, 1)
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)  # (..., Lq, d_v)
    for start in range(0, num_keys, chunk_size):
        stop = min(start + chunk_size, num_keys)
        scores = q @ k[..., start:stop, :].transpose(-2, -1) * scale  # (..., Lq, C): one chunk only
        if causal:
            allowed = causal_allowed(num_queries, num_keys, q.device, start, stop)  # (Lq, C)
            scores = scores.masked_fill(~allowed, float("-inf"))
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (..., Lq, 1)
        # Rows with no visible key yet keep m = -inf; shift them by 0 so no -inf - -inf = NaN.
        shift = m_new.clamp(min=torch.finfo(q.dtype).min)
        p = torch.exp(scores - shift)  # (..., Lq, C), masked entries exactly 0
        rescale = torch.exp(m - shift)  # old statistics were relative to m, now to m_new
        l = l * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:stop, :]  # (..., Lq, d_v)
        m = m_new
    return acc / l.clamp(min=torch.finfo(q.dtype).tiny)  # fully masked rows: 0 / tiny = 0


def repeat_kv(x, n_rep):
    batch, kv_heads, length, d = x.shape
    # A new axis after the heads, expanded (no copy), then folded in: heads 0,0,1,1,... for n_rep=2.
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, d)  # (B, Hkv, n_rep, L, d)
    return x.reshape(batch, kv_heads * n_rep, length, d)  # (B, Hkv*n_rep, L, d)


class GroupedQueryAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__()
        if embed_dim % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"need num_kv_heads={num_kv_heads} | num_heads={num_heads} | embed_dim={embed_dim}")
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, num_heads * self.head_dim, bias=bias)
        self.W_k = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=bias)  # Hkv/H the size of W_q
        self.W_v = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=bias)
        self.W_o = nn.Linear(num_heads * self.head_dim, embed_dim, bias=bias)

    def _split(self, x, heads):  # (B, L, heads*d) -> (B, heads, L, d)
        return x.view(*x.shape[:-1], heads, self.head_dim).transpose(-3, -2)

    def forward(self, x, mask=None, causal=False, cache=None):
        q = self._split(self.W_q(x), self.num_heads)  # (B, H, Lq, d)
        k = self._split(self.W_k(x), self.num_kv_heads)  # (B, Hkv, Lq, d)
        v = self._split(self.W_v(x), self.num_kv_heads)  # (B, Hkv, Lq, d)
        if cache is not None:
            k, v = cache.update(k, v)  # (B, Hkv, Lk, d): everything decoded so far
        n_rep = self.num_heads // self.num_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (B, H, Lk, d)
        allowed = None if mask is None else mask.to(torch.bool)
        if causal:
            end_aligned = causal_allowed(q.shape[-2], k.shape[-2], x.device)  # (Lq, Lk)
            allowed = end_aligned if allowed is None else allowed & end_aligned
        heads = attention(q, k, v, allowed)  # (B, H, Lq, d)
        return self.W_o(heads.transpose(-3, -2).flatten(-2))  # (B, Lq, H*d) -> (B, Lq, E)


class KVCache:
    def __init__(self):
        self.keys = self.values = None  # (B, Hkv, L, d), (B, Hkv, L, d_v) once filled

    def update(self, k, v):
        if self.keys is None:
            self.keys, self.values = k, v
        else:  # the sequence axis is -2: (B, Hkv, L_old + L_new, d)
            self.keys = torch.cat([self.keys, k], dim=-2)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[-2]
