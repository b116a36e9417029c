"""The harness of chapter 6's drivers: a contract-conforming ``MultiHeadAttention`` and the lab
model rebuilt from plain configuration, neither of them the learner's code nor the reference.

The learner's ``head_importance`` and ``prune_heads`` act on a model and on a layer; the grader must
hand them ones that contain no reference solution (the learner's process never loads
``solutions``) and that do not depend on the learner's own chapter-4 layer (one mistake counts
once). :func:`HarnessAttention` is built on ``torch.nn.functional.scaled_dot_product_attention``;
:func:`harness_digits` is the lab model of ``lab/digits.py`` (same parameter names, same forward;
``tests/test_grader_pruning.py`` checks both agree with the committed weights).
"""
from __future__ import annotations


def _nn():
    import torch
    from torch import nn

    return torch, nn


def HarnessAttention(embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):  # noqa: N802
    """A ``MultiHeadAttention`` of the chapter-4 contract, on the fused kernel (a factory, so that
    torch is imported only when a case runs)."""
    return _harness_attention_class()(embed_dim, num_heads, kdim=kdim, vdim=vdim, bias=bias)


_CLASSES = {}


def _harness_attention_class():
    if "attention" in _CLASSES:
        return _CLASSES["attention"]
    torch, nn = _nn()
    F = torch.nn.functional

    class Attention(nn.Module):
        def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True):
            super().__init__()
            self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
            self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.W_k = nn.Linear(kdim or embed_dim, embed_dim, bias=bias)
            self.W_v = nn.Linear(vdim or embed_dim, embed_dim, bias=bias)
            self.W_o = nn.Linear(embed_dim, embed_dim, bias=bias)

        def _split(self, x):  # (B, L, H*d) -> (B, H, L, d)
            return x.view(*x.shape[:-1], self.num_heads, -1).transpose(-3, -2)

        def forward(self, query, key, value, mask=None, head_mask=None):
            q, k, v = self._split(self.W_q(query)), self._split(self.W_k(key)), self._split(self.W_v(value))
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, Lq, d)
            if head_mask is not None:
                heads = heads * head_mask.to(heads.dtype)[:, None, None]
            return self.W_o(heads.transpose(-3, -2).flatten(-2)), None  # weights are not needed here

    _CLASSES["attention"] = Attention
    return Attention


def harness_digits(config):
    """The lab model (``lab.digits.DigitsTransformer``) with :func:`HarnessAttention`."""
    torch, nn = _nn()
    d, heads, d_ff = config["d_model"], config["num_heads"], config["d_ff"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.attn = nn.LayerNorm(d), HarnessAttention(d, heads)
            self.norm2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))

        def forward(self, x, head_mask, class_token_only):
            h = self.norm1(x)
            x, query = (x[:, :1], h[:, :1]) if class_token_only else (x, h)
            x = x + self.attn(query, h, h, head_mask=head_mask)[0]
            return x + self.mlp(self.norm2(x))

    class Digits(nn.Module):
        def __init__(self):
            super().__init__()
            self.num_layers, self.num_heads = config["num_layers"], heads
            self.embed = nn.Linear(config["patch_dim"], d)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(torch.zeros(1, config["num_patches"] + 1, d))
            self.blocks = nn.ModuleList(Block() for _ in range(self.num_layers))
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, config["num_classes"])

        def forward(self, x, head_mask=None):
            h = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.embed(x)], dim=1) + self.pos  # (B, 1+P, d)
            for i, block in enumerate(self.blocks):
                h = block(h, None if head_mask is None else head_mask[i], i == self.num_layers - 1)
            return self.head(self.norm(h[:, 0]))

    return Digits()
