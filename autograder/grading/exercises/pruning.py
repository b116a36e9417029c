"""Checks of chapter 6's ``prune_heads`` (``pruning.py``); its ``head_importance``: ``importance.py``.

It runs on harness code (``autograder/isolation/drivers/pruning.py``): the lab model's attention
layer rebuilt with a fused kernel, so that neither the reference nor the learner's chapter-4
layer is involved. The pruned layer is checked by its structure and by its outputs, which must
equal the unpruned layer's with those heads masked.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from solutions import pruning as reference

from ...spec import Case, Exercise
from .cases import TOLERANCE

# prune_heads runs in float64: a pruned layer sums fewer terms than the masked one (the masked
# heads contribute exact zeros), so outputs agree to ~1e-16 relative.
PRUNE_TOLERANCE = {"rtol": 1e-9, "atol": 1e-12}


def prune_cases(rng):
    def layer(E, H, kdim=None, vdim=None, bias=True):
        shapes = {"W_q": (E, E), "W_k": (E, kdim or E), "W_v": (E, vdim or E), "W_o": (E, E)}
        state = {}
        for name, shape in shapes.items():
            state[f"{name}.weight"] = rng.standard_normal(shape) / np.sqrt(shape[1])
            if bias:
                state[f"{name}.bias"] = 0.5 * rng.standard_normal(shape[0])
        return {"embed_dim": E, "num_heads": H, "kdim": kdim, "vdim": vdim, "bias": bias}, state

    def case(name, steps, rung, E=24, H=6, kdim=None, vdim=None, bias=True, B=2, Lq=5, Lk=5, dtype="float64"):
        config, state = layer(E, H, kdim, vdim, bias)
        query = rng.standard_normal((B, Lq, E))
        key = query.copy() if kdim is None and Lk == Lq else rng.standard_normal((B, Lk, kdim or E))
        value = key.copy() if vdim is None else rng.standard_normal((B, Lk, vdim))
        sizes = dict(B=B, Lq=Lq, Lk=Lk, E=E, H=H, head_dim=E // H)
        cast = (lambda a: a.astype(dtype)) if dtype == "float32" else (lambda a: a)
        calls = ("nothing pruned" if steps == [[]] else "pruned once" if len(steps) == 1 else
                 "a head pruned twice" if any(set(a) & set(b) for i, a in enumerate(steps) for b in steps[i + 1:])
                 else "pruned in several calls")
        features = {"dtype": dtype, "calls": calls, "shape": f"{H} heads of {E // H}",
                    "attention": "cross-attention (kdim, vdim, Lq != Lk), no biases" if kdim else "self-attention"}
        return Case(name=name, driver="prune_run", rung=rung, features=features,
                    inputs={"config": config, "state": {k: cast(v) for k, v in state.items()}, "query": cast(query),
                            "key": cast(key), "value": cast(value), "steps": [list(s) for s in steps], "dtype": dtype,
                            "sizes": sizes}, **(PRUNE_TOLERANCE if dtype == "float64" else TOLERANCE[dtype]))

    one, two = (sorted(int(h) for h in rng.choice(6, n, replace=False)) for n in (1, 2))
    return [
        case(f"float32 layer, 6 heads of 4: prune {two}", [two], 0, dtype="float32"),
        case(f"float64 layer, 6 heads of 4: prune {two}", [two], 1),
        case(f"prune {one}, then {two} (original numbering)", [one, two], 2),
        case("prune [2], then [2, 5] (2 is already gone), then [0]", [[2], [2, 5], [0]], 2),
        case("cross-attention (kdim 10, vdim 14, Lq 3, Lk 7), no biases: prune [0, 2, 5]", [[0, 2, 5]], 2,
             kdim=10, vdim=14, bias=False, Lq=3, Lk=7),
        case("5 heads of 3: prune [4], then [3], then [0, 1]", [[4], [3], [0, 1]], 2, E=15, H=5),
        case("prune nothing", [[]], 1),
    ]


def _prune(layer, heads, *, o_rows=False, only_q=False, prune_o=True, keep_num_heads=False, positions=False,
           biases=True, new_linear=False, o_bias=False):
    """The reference with one step changed; each bug below is one setting of these knobs."""
    heads, removed = {int(h) for h in heads}, getattr(layer, "pruned_heads", set())
    # Without num_heads kept up to date, the count of original heads is lost too.
    total = layer.num_heads if keep_num_heads else layer.num_heads + len(removed)
    surviving = [h for h in range(total) if h not in removed]
    if positions:  # the heads taken as positions in the already-pruned layer
        surviving = list(range(layer.num_heads))
    keep = [i for i, h in enumerate(surviving) if h not in heads]
    d = layer.head_dim
    index = (torch.tensor(keep, dtype=torch.long)[:, None] * d + torch.arange(d)).flatten()
    with torch.no_grad():
        for linear in (layer.W_q,) if only_q else (layer.W_q, layer.W_k, layer.W_v):
            _select(linear, index, 0, biases, new_linear)
        if prune_o:
            _select(layer.W_o, index, 0 if o_rows else 1, biases, new_linear, o_bias)
    if not keep_num_heads:
        layer.num_heads = len(keep)
    layer.pruned_heads = removed | {surviving[i] for i in range(len(surviving)) if i not in keep}
    return layer


def _select(linear, index, dim, biases=True, new_linear=False, o_bias=False):
    if new_linear:  # a fresh nn.Linear (float32 by default) with the kept weights copied in
        fresh = nn.Linear(*linear.weight.index_select(dim, index).shape[::-1], bias=linear.bias is not None)
        with torch.no_grad():
            fresh.weight.copy_(linear.weight.index_select(dim, index))
            if fresh.bias is not None:
                fresh.bias.copy_(linear.bias[index] if dim == 0 else linear.bias)
        linear.weight, linear.bias = fresh.weight, fresh.bias
        linear.out_features, linear.in_features = linear.weight.shape
        return
    linear.weight = nn.Parameter(linear.weight.index_select(dim, index).clone())
    if (dim == 0 or o_bias) and biases and linear.bias is not None:  # o_bias: W_o's bias indexed like its columns
        linear.bias = nn.Parameter(linear.bias[index].clone())
    linear.out_features, linear.in_features = linear.weight.shape


def prune_o_rows(layer, heads):
    return _prune(layer, heads, o_rows=True)


def prune_only_q(layer, heads):
    return _prune(layer, heads, only_q=True, prune_o=False)


def prune_only_q_keeping_num_heads(layer, heads):
    return _prune(layer, heads, only_q=True, prune_o=False, keep_num_heads=True)


def prune_q_and_o(layer, heads):
    return _prune(layer, heads, only_q=True)


def prune_num_heads_not_updated(layer, heads):
    return _prune(layer, heads, keep_num_heads=True)


def prune_positions(layer, heads):
    return _prune(layer, heads, positions=True)


def prune_new_float32_linears(layer, heads):
    return _prune(layer, heads, new_linear=True)


def prune_biases_kept(layer, heads):
    return _prune(layer, heads, biases=False)


def prune_returns_nothing(layer, heads):
    _prune(layer, heads)  # pruned in place, then no return: the caller gets None


def prune_o_bias_too(layer, heads):
    return _prune(layer, heads, o_bias=True)


PRUNE_HEADS = Exercise(
    id="prune_heads",
    cases=prune_cases,
    hints={"float64": "keep the layer's dtype: new nn.Linear layers are float32 unless made with "
                      "dtype=layer.W_q.weight.dtype (or select rows of the old weights)",
           "pruned in several calls": "heads are numbered as in the original layer: map them through pruned_heads",
           "cross-attention (kdim, vdim, Lq != Lk), no biases": "W_k and W_v read kdim and vdim features; a layer "
                                                                 "without biases has none to prune"},
    ladder=(("a float32 layer pruned once", ""),
            ("a float64 layer", "keep the layer's dtype: new nn.Linear layers are float32 unless made with "
             "dtype=layer.W_q.weight.dtype (or select rows of the old weights)"),
            ("repeated calls, cross-attention", "heads are numbered as in the original layer: map them through "
             "pruned_heads, ignore those already gone; W_k and W_v read kdim and vdim features")),
    bugs={
        "your layer matches W_o pruned by rows: W_o reads the heads, so remove its input columns "
        "(weight[:, index]), not its output rows": prune_o_rows,
        "your layer matches pruning W_q only: W_k and W_v hold the same heads' rows and must lose them too": (
            prune_only_q, prune_only_q_keeping_num_heads, prune_q_and_o),
        "your layer matches num_heads not updated: after pruning, num_heads must be the number of heads left "
        "(the forward pass splits the features by it)": prune_num_heads_not_updated,
        "your layer matches heads taken as positions in the already-pruned layer: heads are numbered as in "
        "the original layer, so map them through pruned_heads (and ignore those already removed)": prune_positions,
        "your layer matches biases left unpruned: b_q, b_k and b_v lose the same entries as their weight rows":
            prune_biases_kept,
        "your prune_heads prunes the layer it is given but does not return that layer: return it (callers "
        "write layer = prune_heads(layer, heads))": prune_returns_nothing,
        "your layer matches W_o's bias pruned with its input columns: W_o's bias belongs to its output "
        "features (embed_dim), which pruning heads leaves alone; only its weight loses columns": prune_o_bias_too,
        # huggingface/transformers' prune_linear_layer (pytorch_utils.py) builds the new layer with
        # nn.Linear(...).to(device): float32 whatever the old weights were.
        "your pruned layer's weights are float32 in a float64 layer: new nn.Linear layers take the default "
        "dtype; make them with dtype=layer.W_q.weight.dtype, or select rows of the old weights": (
            prune_new_float32_linears),
    },
    timeout=20.0,
    case_cpu=10.0,  # a case builds and runs layers
)

EXERCISES = (PRUNE_HEADS,)
