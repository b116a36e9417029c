"""`MultiHeadAttention` (PyTorch): classic bugs and correct alternatives."""
import math

import torch
from torch import nn


class Layer(nn.Module):
    """A learner's layer with knobs for the classic mistakes (all off: correct)."""

    scaled, inverted, nan_rows, project_out, after_dropout, force_no_bias = True, False, False, True, False, False

    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__()
        bias = bias and not self.force_no_bias
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_k = nn.Linear(kdim or embed_dim, embed_dim, bias=bias)
        self.W_v = nn.Linear(vdim or embed_dim, embed_dim, bias=bias)
        self.W_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None, head_mask=None):
        B, Lq, E = query.shape
        q = self.W_q(query).view(B, Lq, self.num_heads, -1).transpose(1, 2)
        k = self.W_k(key).view(B, key.shape[1], self.num_heads, -1).transpose(1, 2)
        v = self.W_v(value).view(B, value.shape[1], self.num_heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-1, -2)
        if self.scaled:
            scores = scores / math.sqrt(self.head_dim)
        if mask is not None:
            if mask.dim() == 3:
                mask = mask.unsqueeze(1)
            if self.inverted:
                mask = ~mask
            scores = scores.masked_fill(~mask, float("-inf") if self.nan_rows else -1e30)
        w = scores.softmax(-1)
        if mask is not None and not self.nan_rows:
            w = w * mask
        dropped = self.drop(w)
        heads = dropped @ v
        if head_mask is not None:
            heads = heads * head_mask.view(-1, 1, 1)
        merged = heads.transpose(1, 2).reshape(B, Lq, E)
        return (self.W_o(merged) if self.project_out else merged), (dropped if self.after_dropout else w)

    @classmethod
    def from_torch(cls, ref):
        layer = cls(ref.embed_dim, ref.num_heads, kdim=ref.kdim, vdim=ref.vdim, bias=ref.in_proj_bias is not None)
        layer = layer.to(ref.out_proj.weight.dtype)
        if ref.in_proj_weight is not None:
            weights = ref.in_proj_weight.chunk(3)
        else:
            weights = (ref.q_proj_weight, ref.k_proj_weight, ref.v_proj_weight)
        with torch.no_grad():
            for linear, w in zip((layer.W_q, layer.W_k, layer.W_v), weights):
                linear.weight.copy_(w)
            layer.W_o.weight.copy_(ref.out_proj.weight)
            if ref.in_proj_bias is not None:
                for linear, b in zip((layer.W_q, layer.W_k, layer.W_v), ref.in_proj_bias.chunk(3)):
                    linear.bias.copy_(b)
                layer.W_o.bias.copy_(ref.out_proj.bias)
        return layer


class NoScale(Layer):
    scaled = False


class InvertedMask(Layer):
    inverted = True


class NaNRows(Layer):
    nan_rows = True


class NoOutputProjection(Layer):
    project_out = False


class WeightsAfterDropout(Layer):
    after_dropout = True


class NoBias(Layer):
    force_no_bias = True


class Einsum(Layer):
    """Correct: einsum, -inf fill, then torch.where puts fully masked rows at exactly zero."""

    def forward(self, query, key, value, mask=None, head_mask=None):
        H = self.num_heads
        q = self.W_q(query).unflatten(-1, (H, -1))  # (B, Lq, H, d)
        k = self.W_k(key).unflatten(-1, (H, -1))
        v = self.W_v(value).unflatten(-1, (H, -1))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * q.shape[-1] ** -0.5
        if mask is not None:
            allowed = (mask[:, None] if mask.dim() == 3 else mask).bool()
            scores = scores.masked_fill(~allowed, float("-inf"))
            w = torch.where(allowed, torch.softmax(scores, dim=-1), torch.zeros((), dtype=scores.dtype))
        else:
            w = torch.softmax(scores, dim=-1)
        heads = torch.einsum("bhqk,bkhd->bqhd", self.drop(w), v)  # (B, Lq, H, d)
        if head_mask is not None:
            heads = heads * head_mask[:, None]
        return self.W_o(heads.flatten(-2)), w


class LoopOverHeads(Layer):
    """Correct: one head at a time, slicing the projections' outputs."""

    def forward(self, query, key, value, mask=None, head_mask=None):
        q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)
        d = self.head_dim
        if mask is not None:
            mask = mask[:, None] if mask.dim() == 3 else mask
            mask = mask if mask.dim() == 4 else mask[None, None]  # (B or 1, H or 1, Lq, Lk)
        heads, weights = [], []
        for h in range(self.num_heads):
            qh, kh, vh = (x[..., h * d:(h + 1) * d] for x in (q, k, v))
            s = qh @ kh.transpose(-1, -2) / math.sqrt(d)
            if mask is not None:
                m = mask[:, h] if mask.shape[1] > 1 else mask[:, 0]
                m = m.expand(s.shape)
                s = s.masked_fill(~m, torch.finfo(s.dtype).min)
                w = s.softmax(-1).masked_fill(~m, 0.0)
            else:
                w = s.softmax(-1)
            o = self.drop(w) @ vh
            heads.append(o if head_mask is None else o * head_mask[h])
            weights.append(w)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)


class FromTorchKQV(Layer):
    """from_torch reading the packed in-projection as (k, q, v)."""

    @classmethod
    def from_torch(cls, ref):
        layer = super().from_torch(ref)
        if ref.in_proj_weight is not None:
            with torch.no_grad():
                q = layer.W_q.weight.clone()
                layer.W_q.weight.copy_(layer.W_k.weight)
                layer.W_k.weight.copy_(q)
                if layer.W_q.bias is not None:
                    b = layer.W_q.bias.clone()
                    layer.W_q.bias.copy_(layer.W_k.bias)
                    layer.W_k.bias.copy_(b)
        return layer


class Projection(nn.Module):
    """A projection of one's own: the weight and bias of nn.Linear, applied with F.linear."""

    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) / math.sqrt(n_in))
        self.bias = nn.Parameter(torch.zeros(n_out)) if bias else None

    def forward(self, x):
        return nn.functional.linear(x, self.weight, self.bias)


class OwnProjections(Layer):
    """Right outputs, but the stub's nn.Linear projections replaced by modules of its own."""

    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__(embed_dim, num_heads, kdim=kdim, vdim=vdim, bias=bias, dropout=dropout)
        self.W_q = Projection(embed_dim, embed_dim, bias)
        self.W_v = Projection(vdim or embed_dim, embed_dim, bias)


class ScaledLinear(nn.Linear):
    """nn.Linear with an initialisation of its own."""

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class SubclassedLinear(Layer):
    """Correct: the projections are a subclass of nn.Linear."""

    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__(embed_dim, num_heads, kdim=kdim, vdim=vdim, bias=bias, dropout=dropout)
        self.W_q = ScaledLinear(embed_dim, embed_dim, bias=bias)
        self.W_k = ScaledLinear(kdim or embed_dim, embed_dim, bias=bias)
        self.W_v = ScaledLinear(vdim or embed_dim, embed_dim, bias=bias)
        self.W_o = ScaledLinear(embed_dim, embed_dim, bias=bias)


WRONG = {
    OwnProjections: "W_q and W_v are not nn.Linear",
    NoScale: "without the 1/sqrt(d_k) scale",
    InvertedMask: "inverts the mask",
    NaNRows: "NaN on fully masked rows",
    NoOutputProjection: "missing the output projection W_o",
    WeightsAfterDropout: "weights after dropout",
    NoBias: "has no biases",
    FromTorchKQV: "swaps the query and key projections",
}
CORRECT = [Layer, Einsum, LoopOverHeads, SubclassedLinear]
