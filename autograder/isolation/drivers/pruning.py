"""Drivers of chapter 6 (``head_importance``, ``prune_heads``) and the harness they run on.

The learner's functions act on a model and on a ``MultiHeadAttention``; the grader must hand
them ones that contain no reference solution (the learner's process never loads
``solutions``) and that do not depend on the learner's own chapter-4 layer (one mistake counts
once). So this module holds its own contract-conforming layer, :class:`HarnessAttention`,
built on ``torch.nn.functional.scaled_dot_product_attention``, and :class:`HarnessDigits`, the
lab model of ``lab/digits.py`` rebuilt from plain configuration (same parameter
names, same forward; ``tests/test_grader_pruning.py`` checks both agree with the committed
weights). Weights and data arrive as plain arrays in the case inputs.

Like every driver, these return plain data and never compare: the judge runs them again
against the reference and the known bugs.
"""
from __future__ import annotations

import numpy as np

from .core import describe_result, plain
from .layer import _param_shapes


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


def _load(module, state):
    torch, _ = _nn()
    module.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
    return module


def _snapshot(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def importance_run(ns, config, state, x, y, batch_size, normalize=True, head_mask=None, train_mode=False,
                   sizes=None):
    """``head_importance`` on the lab model: the scores, and whether the model was left alone.

    ``state`` is the model's ``state_dict`` as arrays; ``(x, y)`` are cut into consecutive
    batches of ``batch_size`` (the last one smaller, so that weighting by batch size shows).
    """

    torch, _ = _nn()
    model = _load(harness_digits(config), state).train(train_mode)
    before = _snapshot(model)
    x, y = torch.from_numpy(np.array(x)), torch.from_numpy(np.array(y))
    batches = [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, len(y), batch_size)]
    kwargs = {"normalize": normalize}
    if head_mask is not None:
        kwargs["head_mask"] = torch.from_numpy(np.array(head_mask))
    result = ns.module("pruning").head_importance(model, batches, torch.nn.functional.cross_entropy, **kwargs)
    data = describe_result(result, ("out",))
    after = dict(model.named_parameters())
    data["model parameters unchanged"] = all(torch.equal(before[k], after[k].detach()) for k in before)
    data["model mode unchanged (training=%s)" % train_mode] = model.training == train_mode
    data["result requires grad"] = bool(getattr(result, "requires_grad", False))
    return data




def prune_run(ns, config, state, query, key, value, steps, sizes=None):
    """``prune_heads`` applied ``steps`` times (lists of original head numbers) to a harness layer.

    Returns, after the last step, the layer's structure (parameter shapes, ``num_heads``,
    ``pruned_heads``, the parameter count, whether the same layer came back), and after every
    step the pruned layer's output on ``(query, key, value)``, which the reference makes equal
    to the unpruned layer's output with those heads masked.
    """

    torch, _ = _nn()
    layer = HarnessAttention(config["embed_dim"], config["num_heads"], kdim=config.get("kdim"),
                             vdim=config.get("vdim"), bias=config.get("bias", True))
    layer = _load(layer.double(), state).eval()
    q, k, v = (torch.from_numpy(np.array(a)) for a in (query, key, value))
    prune = ns.module("pruning").prune_heads
    data, outs, same = {}, {}, True
    for heads in steps:
        same = same and prune(layer, list(heads)) is layer
        label = f"the output after pruning heads {list(heads)}"
        try:
            with torch.no_grad():
                outs[label] = plain(layer(q, k, v)[0])[0]
        except Exception as err:  # a broken layer: its shapes below say why
            outs[label] = f"raised {type(err).__name__}"
            break

    data["param_shapes"] = _param_shapes(layer)
    data["num_heads"] = plain(getattr(layer, "num_heads", None))[0]
    removed = getattr(layer, "pruned_heads", None)
    try:
        data["pruned_heads (sorted)"] = sorted(int(h) for h in removed)
    except Exception:
        data["pruned_heads (sorted)"] = None if removed is None else repr(type(removed).__name__)
    data["the number of parameters"] = int(sum(p.numel() for p in layer.parameters()))
    data["prune_heads returned the same layer"] = bool(same)
    data.update(outs)
    return data
