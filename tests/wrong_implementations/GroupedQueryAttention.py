"""`GroupedQueryAttention` (PyTorch): classic bugs and correct alternatives."""
import math

import torch
import torch.nn.functional as F
from torch import nn

from solutions.efficient import repeat_kv


class Layer(nn.Module):
    """A learner's layer with knobs for the classic mistakes (all off: correct)."""

    tiled, start_aligned, neg_inf, full_kv = False, False, False, False

    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, embed_dim // num_heads
        kv_out = embed_dim if self.full_kv else num_kv_heads * self.head_dim
        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_k = nn.Linear(embed_dim, kv_out, bias=bias)
        self.W_v = nn.Linear(embed_dim, kv_out, bias=bias)
        self.W_o = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x, mask=None, causal=False, cache=None):
        B, L, E = x.shape
        kv_heads = self.num_heads if self.full_kv else self.num_kv_heads
        q = self.W_q(x).view(B, L, self.num_heads, -1).transpose(1, 2)
        k = self.W_k(x).view(B, L, kv_heads, -1).transpose(1, 2)
        v = self.W_v(x).view(B, L, kv_heads, -1).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v)
        n = self.num_heads // kv_heads
        if self.tiled:
            k, v = k.repeat(1, n, 1, 1), v.repeat(1, n, 1, 1)
        else:
            k, v = k.repeat_interleave(n, dim=1), v.repeat_interleave(n, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        Lq, Lk = s.shape[-2:]
        allowed = torch.ones(Lq, Lk, dtype=torch.bool)
        if causal:
            allowed = torch.tril(allowed) if self.start_aligned else torch.tril(allowed, diagonal=Lk - Lq)
        if mask is not None:
            allowed = allowed & mask.bool()
        s = s.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(s, -1)
        if not self.neg_inf:
            w = torch.nan_to_num(w, nan=0.0)
        out = (w @ v).transpose(1, 2).reshape(B, Lq, E)
        return self.W_o(out)


class Tiled(Layer):
    tiled = True


class StartAligned(Layer):
    start_aligned = True


class NaNRows(Layer):
    neg_inf = True


class FullSizeKV(Layer):
    full_kv = True


class WithSDPA(Layer):
    """Correct: the fused kernel, which gives zeros on fully masked rows in this torch version."""

    def forward(self, x, mask=None, causal=False, cache=None):
        B, L, E = x.shape
        q = self.W_q(x).view(B, L, self.num_heads, -1).transpose(1, 2)
        k = self.W_k(x).view(B, L, self.num_kv_heads, -1).transpose(1, 2)
        v = self.W_v(x).view(B, L, self.num_kv_heads, -1).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v)
        n = self.num_heads // self.num_kv_heads
        k, v = repeat_kv(k, n), repeat_kv(v, n)
        Lq, Lk = q.shape[-2], k.shape[-2]
        allowed = torch.ones(Lq, Lk, dtype=torch.bool, device=x.device)
        if causal:
            allowed = torch.tril(allowed, diagonal=Lk - Lq)
        if mask is not None:
            allowed = allowed & mask.bool()
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        out = torch.where(allowed.any(-1, keepdim=True), out, torch.zeros_like(out))
        return self.W_o(out.transpose(1, 2).reshape(B, Lq, E))


class WithEinsum(Layer):
    """Correct: grouped heads kept as an axis, no repeat at all."""

    def forward(self, x, mask=None, causal=False, cache=None):
        B, L, E = x.shape
        G, n = self.num_kv_heads, self.num_heads // self.num_kv_heads
        q = self.W_q(x).view(B, L, G, n, -1).permute(0, 2, 3, 1, 4)  # (B, G, n, L, d)
        k = self.W_k(x).view(B, L, G, -1).transpose(1, 2)  # (B, G, L, d)
        v = self.W_v(x).view(B, L, G, -1).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v)
        s = torch.einsum("bgnqd,bgkd->bgnqk", q, k) / math.sqrt(self.head_dim)
        Lq, Lk = s.shape[-2:]
        allowed = torch.ones(Lq, Lk, dtype=torch.bool)
        if causal:
            allowed = torch.arange(Lk)[None, :] <= torch.arange(Lq)[:, None] + (Lk - Lq)
        s = s.view(B, self.num_heads, Lq, Lk)
        if mask is not None:
            allowed = allowed & mask.bool()
        s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
        w = torch.softmax(s, -1).masked_fill(~allowed, 0.0).view(B, G, n, Lq, Lk)
        out = torch.einsum("bgnqk,bgkd->bgnqd", w, v).reshape(B, self.num_heads, Lq, -1)
        return self.W_o(out.transpose(1, 2).reshape(B, Lq, E))


class Projection(nn.Module):
    """A projection of one's own: nn.Linear's weight and bias, applied with F.linear."""

    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) / math.sqrt(n_in))
        self.bias = nn.Parameter(torch.zeros(n_out)) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class OwnProjections(Layer):
    """Right outputs, but W_k and W_v modules of its own instead of the stub's nn.Linear."""

    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__(embed_dim, num_heads, num_kv_heads, bias)
        self.W_k = Projection(embed_dim, num_kv_heads * self.head_dim, bias)
        self.W_v = Projection(embed_dim, num_kv_heads * self.head_dim, bias)


class OutputLinear(nn.Linear):
    """nn.Linear under a name of its own."""


class SubclassedLinear(Layer):
    """Correct: W_o a subclass of nn.Linear."""

    def __init__(self, embed_dim, num_heads, num_kv_heads, bias=True):
        super().__init__(embed_dim, num_heads, num_kv_heads, bias)
        self.W_o = OutputLinear(embed_dim, embed_dim, bias=bias)


WRONG = {
    OwnProjections: "W_k and W_v are not nn.Linear",
    Tiled: "tiles the key/value heads",
    StartAligned: "aligned to the start of the keys",
    NaNRows: "NaN on fully masked rows",
    FullSizeKV: "num_kv_heads * head_dim",
}
CORRECT = [Layer, WithSDPA, WithEinsum, SubclassedLinear]
