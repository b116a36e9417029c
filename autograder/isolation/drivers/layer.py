"""Drivers of the layer exercises (chapters 4 and 7): build the learner's layer from a plain
configuration and state, run it forward (and backward), and describe what came back.

Like every driver (see ``core``), these return plain data and never compare.
"""
from __future__ import annotations

import numpy as np

from .core import describe_result, seed_torch, plain


LINEARS = ("W_q", "W_k", "W_v", "W_o")


def param_shapes(layer):
    """``{"W_q.weight": [out, in], "W_q.bias": [out] or None, ...}`` of the learner's layer."""
    shapes = {}
    for name in LINEARS:
        linear = getattr(layer, name, None)
        for part in ("weight", "bias"):
            tensor = getattr(linear, part, None)
            shapes[f"{name}.{part}"] = None if tensor is None else [int(n) for n in tensor.shape]
    return shapes


def linear_types(layer):
    """``{"W_q": None, ...}``: None for a projection that is an ``nn.Linear`` (or a subclass),
    else the dotted name of what the attribute is (``NoneType`` when it is missing). The type
    itself is asked, not ``isinstance``, which a ``__class__`` property could answer."""
    from torch import nn

    types = {}
    for name in LINEARS:
        kind = type(getattr(layer, name, None))
        module = kind.__module__ if type(kind.__module__) is str else "?"  # a class body may set it to anything
        types[name] = None if issubclass(kind, nn.Linear) else f"{module}.{kind.__qualname__}"[:120]
    return types


def _build_layer(ns, config, state, dtype):
    """The learner's layer with the case's weights loaded, or None when its shapes differ."""
    import torch

    seed_torch(0)
    cls = ns.module("layer").MultiHeadAttention
    layer = cls(config["embed_dim"], config["num_heads"], kdim=config.get("kdim"), vdim=config.get("vdim"),
                bias=config.get("bias", True), dropout=config.get("dropout", 0.0))
    shapes = param_shapes(layer)
    expected = {k: (None if state.get(k) is None else list(state[k].shape)) for k in shapes}
    data = {"param_shapes": shapes, "num_heads": plain(getattr(layer, "num_heads", None))[0],
            "head_dim": plain(getattr(layer, "head_dim", None))[0], "_linears": linear_types(layer)}
    if shapes != expected:
        return None, data
    layer = layer.to(getattr(torch, dtype))
    with torch.no_grad():
        for key, array in state.items():
            if array is not None:
                name, part = key.split(".")
                getattr(getattr(layer, name), part).copy_(torch.from_numpy(np.array(array)))
    return layer, data


def _tensor(x, dtype, grad=False):
    import torch

    if x is None:
        return None
    t = torch.from_numpy(np.array(x))
    if t.is_floating_point():
        t = t.to(getattr(torch, dtype))
    return t.requires_grad_(grad)


def mha_forward(ns, config, state, query, key, value, mask=None, head_mask=None, dtype="float64",
                train=False, grad_out=None, grad_weights=None, sizes=None):
    """Build the learner's ``MultiHeadAttention``, load ``state``, run forward (and backward).

    ``state`` maps ``"W_q.weight"``... to arrays in ``nn.Linear`` layout ``(out, in)``.
    With ``grad_out``/``grad_weights`` (arrays shaped like out/weights) it also returns the
    gradients of ``sum(out * grad_out) + sum(weights * grad_weights)`` under ``"grads"``.
    """
    import torch

    layer, data = _build_layer(ns, config, state, dtype)
    if layer is None:
        return data
    layer.train(train)
    grad = grad_out is not None
    q, k, v = (_tensor(x, dtype, grad) for x in (query, key, value))
    m, h = _tensor(mask, dtype), _tensor(head_mask, dtype)
    seed_torch(1)
    result = layer(q, k, v, mask=m, head_mask=h)
    data.update(describe_result(result, ("out", "weights")))
    # Cast back to the case's dtype, so that an unchanged input compares equal to the original.
    inputs = {"query": q, "key": k, "value": v, "mask": m, "head_mask": h}
    data["kwargs_after"] = {name: _cast_back(t, original) for (name, t), original in
                            zip(inputs.items(), (query, key, value, mask, head_mask)) if t is not None}
    if grad and "out" in data and "weights" in data and _shapes_fit(data, grad_out, grad_weights):
        out, weights = result
        loss = (out * _tensor(grad_out, dtype)).sum() + (weights * _tensor(grad_weights, dtype)).sum()
        if loss.requires_grad:
            loss.backward()
        grads = {"query": q.grad, "key": k.grad, "value": v.grad}
        for name in LINEARS:
            for part in ("weight", "bias"):
                tensor = getattr(getattr(layer, name), part)
                if tensor is not None:
                    grads[f"{name}.{part}"] = tensor.grad
        data["grads"] = {name: plain(g)[0] for name, g in grads.items()}
    return data


def _cast_back(tensor, original):
    array = plain(tensor)[0]
    return array if array is None else array.astype(np.asarray(original).dtype)


def _shapes_fit(data, grad_out, grad_weights):
    return (getattr(data["out"], "shape", None) == np.shape(grad_out)
            and getattr(data["weights"], "shape", None) == np.shape(grad_weights))


def mha_dropout(ns, config, state, query, key, value, mask=None, dtype="float64", sizes=None):
    """Train- and eval-mode passes of a layer with ``config["dropout"] > 0``.

    Eval mode must equal no dropout (compared with the reference); the train-mode weights are
    returned before dropout (compared too); the train-mode output must differ from the eval
    one (a property: dropout acts), but its random values are never compared.
    """
    import torch

    layer, data = _build_layer(ns, config, state, dtype)
    if layer is None:
        return data
    q, k, v, m = (_tensor(x, dtype) for x in (query, key, value, mask))
    layer.eval()
    with torch.no_grad():
        seed_torch(1)  # the same dropout draws as the reference, should a bug use them
        data.update(describe_result(layer(q, k, v, mask=m), ("out", "weights")))
        layer.train()
        seed_torch(1)
        train = describe_result(layer(q, k, v, mask=m), ("out", "weights"))
    data["weights_train"] = train.get("weights")
    data["_out_train"] = train.get("out")
    return data


def mha_from_torch(ns, config, torch_state, query, key, value, mask=None, dtype="float64", sizes=None):
    """``MultiHeadAttention.from_torch`` of a ``torch.nn.MultiheadAttention`` with given weights.

    ``torch_state`` is the torch module's ``state_dict`` as arrays; the layer built from it
    runs on the same inputs in eval mode.
    """
    import torch

    seed_torch(0)
    ref = torch.nn.MultiheadAttention(config["embed_dim"], config["num_heads"], bias=config.get("bias", True),
                                      kdim=config.get("kdim"), vdim=config.get("vdim"), batch_first=True,
                                      dtype=getattr(torch, dtype))
    ref.load_state_dict({k: torch.from_numpy(np.array(a)).to(getattr(torch, dtype)) for k, a in torch_state.items()})
    ref.eval()
    layer = ns.module("layer").MultiHeadAttention.from_torch(ref)
    data = {"param_shapes": param_shapes(layer)}
    layer.eval()
    q, k, v, m = (_tensor(x, dtype) for x in (query, key, value, mask))
    with torch.no_grad():
        data.update(describe_result(layer(q, k, v, mask=m), ("out", "weights")))
    return data


# --- torch drivers for chapter 7: GroupedQueryAttention and KVCache ---------------------------

GQA_CONFIG = ("embed_dim", "num_heads", "num_kv_heads")


class _Past:
    """Keys and values of earlier tokens, as a cache holding them would give them back.

    Harness for ``GroupedQueryAttention``'s own checks: the layer's ``update(k, v)`` call gets
    the past and the new positions along the sequence axis, without the learner's ``KVCache``
    (graded on its own)."""

    def __init__(self, keys, values):
        self.keys, self.values = keys, values

    def update(self, k, v):
        import torch

        self.keys, self.values = torch.cat([self.keys, k], dim=-2), torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def __len__(self):
        return self.keys.shape[-2]


def gqa_forward(ns, config, state, x, mask=None, causal=False, past=None, dtype="float64", sizes=None):
    """Build the learner's ``GroupedQueryAttention``, load ``state``, run ``forward`` once.

    ``past`` (``{"keys": (B, Hkv, Lp, d), "values": ...}``) is handed to ``forward`` as its
    ``cache``: the ``Lq`` new positions attend to ``Lp + Lq`` keys, as during decoding.
    """
    import torch

    seed_torch(0)
    cls = ns.module("efficient").GroupedQueryAttention
    layer = cls(*(config[k] for k in GQA_CONFIG), bias=config.get("bias", True))
    shapes = param_shapes(layer)
    expected = {k: (None if state.get(k) is None else list(state[k].shape)) for k in shapes}
    data = {"param_shapes": shapes, **{k: plain(getattr(layer, k, None))[0] for k in
                                       ("num_heads", "num_kv_heads", "head_dim")}, "_linears": linear_types(layer)}
    if shapes != expected:
        return data
    layer = layer.to(getattr(torch, dtype)).eval()
    with torch.no_grad():
        for key, array in state.items():
            if array is not None:
                name, part = key.split(".")
                getattr(getattr(layer, name), part).copy_(torch.from_numpy(np.array(array)))
        cache = None if past is None else _Past(_tensor(past["keys"], dtype), _tensor(past["values"], dtype))
        out = layer(_tensor(x, dtype), mask=_tensor(mask, dtype), causal=causal, cache=cache)
    data.update(describe_result(out, ("out",)))
    return data


def kv_cache_updates(ns, keys, values, sizes=None):
    """A learner's ``KVCache``, updated with ``keys[i]``, ``values[i]`` in turn.

    Returns ``len`` of the empty cache (``"len, empty"``), and for each update ``i`` (from 1)
    the ``"keys, update i"`` and ``"values, update i"`` it returned and ``"len, update i"``.
    """
    import torch

    cache = ns.module("efficient").KVCache()
    data = {"len, empty": plain(len(cache))[0]}
    for i, (k, v) in enumerate(zip(keys, values), start=1):
        result = cache.update(torch.from_numpy(np.array(k)), torch.from_numpy(np.array(v)))
        described = describe_result(result, ("keys", "values"))
        for name in ("keys", "values"):
            data[f"{name}, update {i}"] = described.get(name)
        data[f"len, update {i}"] = plain(len(cache))[0]
    return data


def kv_cache_decode(ns, q, k, v, prompt, sizes=None):
    """Decode with the learner's ``KVCache``: the first ``prompt`` positions at once, then one
    at a time; each step's queries attend (end-aligned causal mask) to what ``update`` returns.

    The attention here is harness: it is the same in the learner's run and the reference's, so
    only the cache can make the outputs differ. Returns ``out (B, H, L, d_v)``.
    """
    import torch

    q, k, v = (torch.from_numpy(np.array(t)) for t in (q, k, v))  # (B, H, L, d)
    cache = ns.module("efficient").KVCache()
    bounds = [0, prompt, *range(prompt + 1, q.shape[-2] + 1)]
    outs = []
    for start, stop in zip(bounds, bounds[1:]):
        keys, values = cache.update(k[..., start:stop, :], v[..., start:stop, :])  # (B, H, Lk, d)
        scores = q[..., start:stop, :] @ keys.transpose(-2, -1) / q.shape[-1] ** 0.5  # (B, H, Lq, Lk)
        lq, lk = stop - start, keys.shape[-2]
        allowed = torch.arange(lk)[None, :] <= torch.arange(lq)[:, None] + (lk - lq)
        outs.append(torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ values)
    return describe_result(torch.cat(outs, dim=-2), ("out",))

# Chapter 6 (head_importance, prune_heads): drivers on harness code, in their own module.
