"""The harness of chapter 6's drivers: a contract-conforming ``MultiHeadAttention`` and the lab
model rebuilt from plain configuration, neither of them the learner's code nor the reference.

The learner's ``head_importance`` and ``prune_heads`` act on a model and on a layer; the grader must
hand them ones that contain no reference solution (the learner's process never loads
``solutions``) and that do not depend on the learner's own chapter-4 layer (one mistake counts
once). :func:`HarnessAttention` keeps the contract's four ``nn.Linear`` and hands the heads to
PyTorch's ``torch.nn.functional.multi_head_attention_forward`` (the release ships this file: it
must not spell out the chapters' answers, such as splitting and merging the heads);
:func:`harness_digits` is the lab model of ``lab/digits.py`` (same parameter names, same forward;
``tests/test_grader_pruning.py`` checks both agree with the committed weights).
"""
from __future__ import annotations


def torch_nn():
    import torch
    from torch import nn

    return torch, nn


def HarnessAttention(embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):  # noqa: N802
    """A ``MultiHeadAttention`` of the chapter-4 contract (parameters, ``num_heads``, ``head_dim``,
    ``head_mask``), on PyTorch's multi-head attention; a factory, so that torch is imported only
    when a case runs. ``dropout`` is accepted and ignored: the grader's layer never drops."""
    return _harness_attention_class()(embed_dim, num_heads, kdim=kdim, vdim=vdim, bias=bias)


def _unfilled_linear():
    """``nn.Linear`` without torch's random initialisation, for parameters that are overwritten
    right after (:func:`harness_digits` with a ``state``): the initialisation is half the cost
    of building the lab model, which chapter 6's checks do once per case."""
    if "unfilled" not in _CLASSES:
        _, nn = torch_nn()

        class Linear(nn.Linear):
            def reset_parameters(self):
                pass

        _CLASSES["unfilled"] = Linear
    return _CLASSES["unfilled"]


_CLASSES = {}


def _harness_attention_class():
    if "attention" in _CLASSES:
        return _CLASSES["attention"]
    torch, nn = torch_nn()
    F = torch.nn.functional

    class Attention(nn.Module):
        def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, linear=nn.Linear):
            super().__init__()
            self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
            self.W_q = linear(embed_dim, embed_dim, bias=bias)
            self.W_k = linear(kdim or embed_dim, embed_dim, bias=bias)
            self.W_v = linear(vdim or embed_dim, embed_dim, bias=bias)
            self.W_o = linear(embed_dim, embed_dim, bias=bias)

        def forward(self, query, key, value, mask=None, head_mask=None):
            # PyTorch's own multi-head attention does the heads. Its head size is the query's
            # width over num_heads: after prune_heads, W_q's output (num_heads * head_dim) is
            # narrower than the query, which then goes in already projected (identity W_q).
            w_q, b_q = self.W_q.weight, self.W_q.bias
            width = w_q.shape[0]
            if width != query.shape[-1] or (b_q is not None and self.W_k.bias is None):
                # Pruned (or a b_q without b_k, which PyTorch takes only with the others):
                # project here, PyTorch's W_q is the identity.
                query, w_q, b_q = self.W_q(query), torch.eye(width, dtype=query.dtype), None
            w_v, b_v = self.W_v.weight, self.W_v.bias
            if head_mask is not None:
                # Each head's output is linear in its values: gating head h = scaling its rows
                # of W_v and b_v (differentiable in the gate, as head_importance needs).
                gate = head_mask.to(w_v.dtype).repeat_interleave(width // self.num_heads)
                w_v, b_v = w_v * gate[:, None], None if b_v is None else b_v * gate
            b_k = self.W_k.bias
            if b_k is not None:
                b_q = torch.zeros_like(b_k) if b_q is None else b_q
            biases = None if b_k is None else torch.cat([b_q, b_k, b_v])
            batched = query.dim() == 3
            seq_first = (lambda x: x.transpose(0, 1)) if batched else (lambda x: x)
            out, _ = F.multi_head_attention_forward(
                seq_first(query), seq_first(key), seq_first(value), width, self.num_heads,
                None, biases, None, None, False, 0.0, self.W_o.weight, self.W_o.bias,
                training=False, need_weights=False, attn_mask=self._blocked(mask, query),
                use_separate_proj_weight=True, q_proj_weight=w_q,
                k_proj_weight=self.W_k.weight, v_proj_weight=w_v)
            return seq_first(out), None  # the weights are not needed here

        def _blocked(self, mask, q):
            """The course's mask (True = may attend) as PyTorch's (True = may not), one per head."""
            if mask is None:
                return None
            allowed = torch.as_tensor(mask).to(torch.bool)
            if not allowed.any(-1).all():
                raise ValueError("the harness layer does not take a mask with a fully masked query row")
            if q.dim() == 2 or allowed.dim() == 2:
                return ~allowed if allowed.dim() == 2 else ~allowed.reshape(-1, *allowed.shape[-2:])
            if allowed.dim() == 3:  # (B, Lq, Lk): shared by all heads
                allowed = allowed[:, None]
            allowed = allowed.expand(q.shape[0], self.num_heads, *allowed.shape[-2:])
            return ~allowed.reshape(-1, *allowed.shape[-2:])  # (B*H, Lq, Lk)

    _CLASSES["attention"] = Attention
    return Attention


def harness_digits(config, state=None):
    """The lab model (``lab.digits.DigitsTransformer``) with :func:`HarnessAttention`; with
    ``state`` (parameter name -> array, every parameter of the model), its parameters are copies
    of those arrays instead of torch's random initialisation."""
    torch, nn = torch_nn()
    d, heads, d_ff = config["d_model"], config["num_heads"], config["d_ff"]
    linear = nn.Linear if state is None else _unfilled_linear()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.attn = nn.LayerNorm(d), _harness_attention_class()(d, heads, linear=linear)
            self.norm2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(linear(d, d_ff), nn.GELU(), linear(d_ff, d))

        def forward(self, x, head_mask, class_token_only):
            h = self.norm1(x)
            x, query = (x[:, :1], h[:, :1]) if class_token_only else (x, h)
            x = x + self.attn(query, h, h, head_mask=head_mask)[0]
            return x + self.mlp(self.norm2(x))

    class Digits(nn.Module):
        def __init__(self):
            super().__init__()
            self.num_layers, self.num_heads = config["num_layers"], heads
            self.embed = linear(config["patch_dim"], d)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(torch.zeros(1, config["num_patches"] + 1, d))
            self.blocks = nn.ModuleList(Block() for _ in range(self.num_layers))
            self.norm, self.head = nn.LayerNorm(d), linear(d, config["num_classes"])

        def forward(self, x, head_mask=None):
            h = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.embed(x)], dim=1) + self.pos  # (B, 1+P, d)
            for i, block in enumerate(self.blocks):
                h = block(h, None if head_mask is None else head_mask[i], i == self.num_layers - 1)
            return self.head(self.norm(h[:, 0]))

    model = Digits()
    if state is not None:
        fill(model, state)
    return model


def fill(model, state):
    """Copy ``state`` (parameter name -> array) into every parameter of ``model`` (which has no
    buffers), as a strict ``load_state_dict`` does (same names, same shapes: no broadcasting,
    the model's dtype kept), without its walk of every module. Returns ``model``."""
    torch, _ = torch_nn()
    params = dict(model.named_parameters())
    if set(params) != set(state):
        raise KeyError(f"the state misses {sorted(set(params) - set(state))} and has unexpected "
                       f"{sorted(set(state) - set(params))}")
    with torch.no_grad():
        for name, p in params.items():
            value = torch.as_tensor(state[name])
            if value.shape != p.shape:
                raise ValueError(f"{name}: shape {tuple(value.shape)} in the state, {tuple(p.shape)} "
                                 "in the model")
            p.copy_(value)
    return model
