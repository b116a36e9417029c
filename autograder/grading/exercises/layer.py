"""Checks of chapter 4 (``layer.py``): ``multi_head_attention`` (NumPy), ``parameter_count``,
and the PyTorch module ``MultiHeadAttention`` (forward, masks, head_mask, dropout, gradients,
``from_torch``)."""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from solutions.attention import scaled_dot_product_attention
from solutions.heads import merge_heads, split_heads
from solutions.layer import MultiHeadAttention as ReferenceLayer
from solutions.layer import parameter_count as reference_parameter_count

from ...spec import Case, Exercise
from .cases import GRAD_TOLERANCE, TOLERANCE, call_case, randn

# --- multi_head_attention (NumPy) --------------------------------------------------------------


def _params(rng, dtype, E_q, E_k, E_v, H, d_k, d_v, E_out, bias=True):
    """Projection weights ``x @ W`` scaled by 1/sqrt(fan-in), so that scores stay O(1)."""
    shapes = {"q": (E_q, H * d_k), "k": (E_k, H * d_k), "v": (E_v, H * d_v), "o": (H * d_v, E_out)}
    params = {f"W_{n}": randn(rng, s, dtype, 1 / math.sqrt(s[0])) for n, s in shapes.items()}
    if bias:
        params.update({f"b_{n}": randn(rng, s[1:], dtype, 0.5) for n, s in shapes.items()})
    return params


def _masks(rng, B, H, Lq, Lk):
    """The layer checks' masks (B = 2): padding (B, 1, Lk), end-aligned causal (Lq, Lk), a
    (B, Lq, Lk) mask with fully masked rows (query 2 of sequence 0, query 0 of sequence 1),
    and a 4-D per-head mask (B, H, Lq, Lk)."""
    padding = (np.arange(Lk) < np.array([3, 5])[:, None])[:, None, :]  # (B, 1, Lk)
    causal = np.arange(Lk)[None, :] <= np.arange(Lq)[:, None] + (Lk - Lq)  # (Lq, Lk)
    empty_rows = rng.random((B, Lq, Lk)) < 0.6
    empty_rows[..., 0] = True
    empty_rows[0, 2] = empty_rows[1, 0] = False
    per_head = rng.random((B, H, Lq, Lk)) < 0.7
    per_head[..., -1] = True
    return padding, causal, empty_rows, per_head


def mha_function_cases(rng):
    B, H, Lq, Lk, d_k, d_v, E_q, E_k, E_v, E_out = 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
    cross = dict(B=B, Lq=Lq, Lk=Lk, d_k=d_k, d_v=d_v, E_q=E_q, E_k=E_k, E_v=E_v, E_out=E_out)

    def cross_case(name, dtype, mask=None, bias=True, heads=H):
        sizes = {**cross, "H": heads, "H*d_k": heads * d_k, "H*d_v": heads * d_v}
        args = [randn(rng, (B, Lq, E_q), dtype), randn(rng, (B, Lk, E_k), dtype), randn(rng, (B, Lk, E_v), dtype),
                _params(rng, dtype, E_q, E_k, E_v, heads, d_k, d_v, E_out, bias), heads]
        return call_case(name, "multi_head_attention", args, {} if mask is None else {"mask": mask},
                         returns=("out", "weights"), sizes=sizes, dtype=dtype,
                         properties=("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged"))

    def self_case(name, dtype, mask=None):
        # d_k == d_v and one input for query, key and value: the only setting where using the
        # key projection for the values runs at all.
        L, E, d, E_o = 5, 8, 4, 10
        x = randn(rng, (B, L, E), dtype)
        args = [x, x.copy(), x.copy(), _params(rng, dtype, E, E, E, H, d, d, E_o), H]
        sizes = {"B": B, "H": H, "L": L, "E": E, "d": d, "E_out": E_o, "H*d": H * d}
        return call_case(name, "multi_head_attention", args, {} if mask is None else {"mask": mask},
                         returns=("out", "weights"), sizes=sizes, dtype=dtype,
                         properties=("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged"))

    padding, causal, empty_rows, per_head = _masks(rng, B, H, Lq, Lk)
    return [
        cross_case("float64 cross-attention, biases, no mask", "float64"),
        cross_case("float32 stays float32, padding mask (B, 1, Lk)", "float32", padding),
        cross_case("float64, no biases, causal mask (Lq, Lk)", "float64", causal, bias=False),
        cross_case("float64, fully masked rows (B, Lq, Lk)", "float64", empty_rows),
        cross_case("float64, 4-D mask per head (B, H, Lq, Lk)", "float64", per_head),
        cross_case("one head", "float64", padding, heads=1),
        self_case("float64 self-attention", "float64"),
        self_case("float32 self-attention, causal", "float32", np.tril(np.ones((5, 5), bool))),
    ]


def _no_transpose_split(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, num_heads, L, F // num_heads)  # (B, H, L, d), positions mixed into heads


def _no_transpose_merge(x):
    B, H, L, d = x.shape
    return x.reshape(B, L, H * d)


def _strided_split(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, L, F // num_heads, num_heads).transpose(0, 3, 1, 2)  # head h: features h::H


def _mha(query, key, value, params, num_heads, mask=None, *, split=split_heads, merge=merge_heads, scale=None,
         bias=True, values_from_keys=False, output_projection=True):
    """The NumPy layer with one step changed; each bug below is one setting of these knobs."""
    def affine(x, n):
        b = params.get(f"b_{n}") if bias else None
        return x @ params[f"W_{n}"] + (0 if b is None else b)

    q, k = split(affine(query, "q"), num_heads), split(affine(key, "k"), num_heads)  # (B, H, L, d_k)
    v = k if values_from_keys else split(affine(value, "v"), num_heads)  # (B, H, Lk, d_v)
    if mask is not None:
        mask = np.asarray(mask, bool)
        mask = mask[:, None] if mask.ndim == 3 else mask  # (B, 1, Lq, Lk): shared by the heads
    if scale is not None:  # the reference divides by sqrt(d_k); undo that, divide by `scale`
        q = q * math.sqrt(q.shape[-1]) / scale(q)
    heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Lq, d_v)
    merged = merge(heads)  # (B, Lq, H*d_v)
    return (affine(merged, "o") if output_projection else merged), weights


def mha_no_transpose(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask, split=_no_transpose_split, merge=_no_transpose_merge)


def mha_strided_heads(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask, split=_strided_split)


def mha_without_W_o(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask, output_projection=False)


def mha_values_from_keys(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask, values_from_keys=True)


def mha_scaled_by_d_model(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask,
                scale=lambda q: math.sqrt(q.shape[-1] * num_heads))


def mha_no_scale(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask, scale=lambda q: 1.0)


def mha_without_bias(query, key, value, params, num_heads, mask=None):
    return _mha(query, key, value, params, num_heads, mask, bias=False)


MULTI_HEAD_ATTENTION = Exercise(
    id="multi_head_attention",
    cases=mha_function_cases,
    uses=("split_heads", "merge_heads", "scaled_dot_product_attention", "masked_softmax", "softmax"),
    bugs={
        "your output matches heads split (and merged) with a reshape but no transpose: positions get "
        "mixed into heads": mha_no_transpose,
        "your output takes the heads from the wrong axis: head h must use features h*d:(h+1)*d of the "
        "projections": mha_strided_heads,
        "your output is missing the output projection W_o (and b_o)": mha_without_W_o,
        "your output uses the key projection for the values: the values are value @ W_v": mha_values_from_keys,
        "your output matches scores scaled by 1/sqrt(H*d_k) (the model width) instead of 1/sqrt(d_k), "
        "the per-head size": mha_scaled_by_d_model,
        "your output matches scores without the 1/sqrt(d_k) scale": mha_no_scale,
        "your output ignores the biases b_q, b_k, b_v, b_o": mha_without_bias,
    },
)


# --- parameter_count ---------------------------------------------------------------------------

def count_cases(rng):
    def case(name, *args, rung=0, **kwargs):
        return call_case(name, "parameter_count", list(args), kwargs, rung=rung)

    def dims(n):  # distinct sizes, so that a swapped argument shows
        return [int(x) for x in rng.choice(np.arange(3, 130), n, replace=False)]

    q, k, v, o = dims(4)
    return [
        case("query_dim, num_heads, key_dim; the rest defaulted", q, int(rng.integers(2, 9)), k),
        case("one head, the rest defaulted", dims(1)[0], 1, k),
        case("value_dim given", q, int(rng.integers(2, 9)), k, value_dim=v, rung=1),
        case("value_dim and output_dim given", v, int(rng.integers(2, 9)), k, value_dim=q, output_dim=o, rung=1),
        case("bias=False", q, int(rng.integers(2, 9)), o, bias=False, rung=2),
        case("output_dim given, bias=False", k, int(rng.integers(2, 9)), v, output_dim=o, bias=False, rung=2),
        case("one head, all six arguments positional", dims(1)[0], 1, *dims(3), True, rung=2),
    ]


def parameter_count_without_biases(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    return reference_parameter_count(query_dim, num_heads, key_dim, value_dim, output_dim, bias=False)


def parameter_count_dims_not_per_head(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    value_dim = key_dim if value_dim is None else value_dim
    output_dim = query_dim if output_dim is None else output_dim
    return (2 * (query_dim * key_dim + bias * key_dim) + query_dim * value_dim + bias * value_dim
            + value_dim * output_dim + bias * output_dim)


def parameter_count_value_dim_defaults_to_query_dim(query_dim, num_heads, key_dim, value_dim=None,
                                                    output_dim=None, bias=True):
    return reference_parameter_count(query_dim, num_heads, key_dim, query_dim if value_dim is None else value_dim,
                                     output_dim, bias)


def parameter_count_ignores_output_dim(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    return reference_parameter_count(query_dim, num_heads, key_dim, value_dim, None, bias)


def parameter_count_without_output_bias(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    output_dim = query_dim if output_dim is None else output_dim
    return reference_parameter_count(query_dim, num_heads, key_dim, value_dim, output_dim, bias) - bias * output_dim


PARAMETER_COUNT = Exercise(
    id="parameter_count",
    cases=count_cases,
    ladder=(("value_dim and output_dim defaulted", ""),
            ("value_dim or output_dim given", "W_v has num_heads * value_dim outputs and W_o maps them to output_dim"),
            ("bias=False", "without biases only the four weight matrices count")),
    bugs={
        "your count leaves out the biases (bias=True has one per output feature of each projection)":
            parameter_count_without_biases,
        "your count treats key_dim and value_dim as the model width: they are per head, so each "
        "projection has num_heads * key_dim outputs": parameter_count_dims_not_per_head,
        "your count defaults value_dim to query_dim: it defaults to key_dim":
            parameter_count_value_dim_defaults_to_query_dim,
        "your count leaves out the output projection's bias b_o (output_dim entries)":
            parameter_count_without_output_bias,
        "your count ignores output_dim: W_o maps num_heads * value_dim features to output_dim":
            parameter_count_ignores_output_dim,
    },
)


# --- MultiHeadAttention (PyTorch) --------------------------------------------------------------

def _linear_state(rng, E, kdim, vdim, bias):
    """``nn.Linear`` weights ``(out, in)`` for W_q..W_o, scaled by 1/sqrt(fan-in), float64."""
    fan_in = {"W_q": E, "W_k": kdim, "W_v": vdim, "W_o": E}
    state = {}
    for name, n_in in fan_in.items():
        state[f"{name}.weight"] = randn(rng, (E, n_in), scale=1 / math.sqrt(n_in))
        state[f"{name}.bias"] = randn(rng, (E,), scale=0.5) if bias else None
    return state


def _torch_state(rng, E, kdim, vdim, bias):
    """A ``torch.nn.MultiheadAttention`` state_dict as arrays (packed when kdim = vdim = E)."""
    state = {}
    if kdim == vdim == E:
        state["in_proj_weight"] = randn(rng, (3 * E, E), scale=1 / math.sqrt(E))
    else:
        for name, n_in in (("q", E), ("k", kdim), ("v", vdim)):
            state[f"{name}_proj_weight"] = randn(rng, (E, n_in), scale=1 / math.sqrt(n_in))
    state["out_proj.weight"] = randn(rng, (E, E), scale=1 / math.sqrt(E))
    if bias:
        state["in_proj_bias"] = randn(rng, (3 * E,), scale=0.5)
        state["out_proj.bias"] = randn(rng, (E,), scale=0.5)
    return state


def layer_cases(rng):
    B, H, Lq, Lk, d, kdim, vdim = 2, 3, 4, 5, 6, 7, 11
    E = H * d
    sizes = dict(B=B, H=H, Lq=Lq, Lk=Lk, d=d, E=E, kdim=kdim, vdim=vdim)

    def inputs(dtype="float64", cross=True, bias=True, dropout=0.0):
        k_in, v_in = (kdim, vdim) if cross else (E, E)
        config = dict(embed_dim=E, num_heads=H, kdim=k_in if cross else None, vdim=v_in if cross else None,
                      bias=bias, dropout=dropout)
        return dict(config=config, state=_linear_state(rng, E, k_in, v_in, bias), query=randn(rng, (B, Lq, E), dtype),
                    key=randn(rng, (B, Lk, k_in), dtype), value=randn(rng, (B, Lk, v_in), dtype), dtype=dtype,
                    sizes=sizes)

    def case(name, driver, inputs, dtype="float64",
             properties=("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged"), tolerance=None):
        return Case(name=name, driver=driver, inputs=inputs, properties=properties,
                    **(tolerance or TOLERANCE[dtype]))

    padding, causal, empty_rows, per_head = _masks(rng, B, H, Lq, Lk)
    gradients = {**inputs(), "mask": padding & causal,
                 "grad_out": randn(rng, (B, Lq, E)), "grad_weights": randn(rng, (B, H, Lq, Lk))}

    def from_torch(cross, bias, mask):
        k_in, v_in = (kdim, vdim) if cross else (E, E)
        config = dict(embed_dim=E, num_heads=H, kdim=k_in, vdim=v_in, bias=bias)
        return dict(config=config, torch_state=_torch_state(rng, E, k_in, v_in, bias), query=randn(rng, (B, Lq, E)),
                    key=randn(rng, (B, Lk, k_in)), value=randn(rng, (B, Lk, v_in)), mask=mask, sizes=sizes)

    return [
        case("float64 self-attention shapes, no mask", "mha_forward", inputs(cross=False)),
        case("float32 stays float32, padding mask (B, 1, Lk)", "mha_forward", {**inputs("float32"), "mask": padding},
             "float32"),
        case("cross-attention (kdim, vdim), causal mask (Lq, Lk), Lq < Lk", "mha_forward",
             {**inputs(), "mask": causal}),
        case("fully masked rows (B, Lq, Lk)", "mha_forward", {**inputs(), "mask": empty_rows}),
        case("4-D mask per head and a head_mask that removes a head", "mha_forward",
             {**inputs(), "mask": per_head, "head_mask": np.array([1.0, 0.0, 0.5])}),
        case("bias=False", "mha_forward", {**inputs(bias=False), "mask": causal}),
        case("dropout=0 in training mode equals eval mode", "mha_forward", {**inputs(), "train": True}),
        case("dropout=0.5: none in eval mode, weights returned before dropout, dropout in training",
             "mha_dropout", {**inputs(dropout=0.5), "mask": padding},
             properties=("rows_sum_to_one", "dropout_in_training")),
        case("gradients w.r.t. query, key, value and W_q..W_o (float64)", "mha_forward", gradients,
             tolerance=GRAD_TOLERANCE),
        case("from_torch, packed in-projection (kdim = vdim = E)", "mha_from_torch", from_torch(False, True, causal)),
        case("from_torch, kdim and vdim, no bias", "mha_from_torch", from_torch(True, False, padding)),
    ]


class _Layer(ReferenceLayer):
    """The reference layer with one step changed; each bug below sets one of these knobs."""

    scale = staticmethod(lambda head_dim, embed_dim: math.sqrt(head_dim))
    softmax_dim = -1
    inverted_mask = False
    fill = "min"  # the dtype's lowest value; "-inf" for the NaN bug
    zero_masked = True  # set fully masked rows (and masked keys) to exactly 0 after the softmax
    values_from_keys = False
    output_projection = True
    use_head_mask = True
    split_without_transpose = False
    dropout_always = False
    weights_after_dropout = False

    def _split(self, x):  # (B, L, H*d) -> (B, H, L, d)
        if self.split_without_transpose:
            return x.reshape(x.shape[0], self.num_heads, x.shape[1], -1)
        return super()._split(x)

    def forward(self, query, key, value, mask=None, head_mask=None):
        q, k = self._split(self.W_q(query)), self._split(self.W_k(key))  # (B, H, L, d)
        v = k if self.values_from_keys else self._split(self.W_v(value))
        scores = q @ k.transpose(-2, -1) / self.scale(q.shape[-1], self.num_heads * q.shape[-1])
        if mask is not None:
            allowed = mask.to(torch.bool)
            allowed = allowed[:, None] if allowed.ndim == 3 else allowed  # (B, 1, Lq, Lk)
            allowed = ~allowed if self.inverted_mask else allowed
            fill = float("-inf") if self.fill == "-inf" else torch.finfo(scores.dtype).min
            scores = scores.masked_fill(~allowed, fill)
        weights = torch.softmax(scores, dim=self.softmax_dim)  # (B, H, Lq, Lk)
        if mask is not None and self.zero_masked:
            weights = weights.masked_fill(~allowed, 0.0)
        dropped = nn.functional.dropout(weights, self.dropout.p, training=self.training or self.dropout_always)
        heads = dropped @ v  # (B, H, Lq, d)
        if head_mask is not None and self.use_head_mask:
            heads = heads * head_mask.to(heads.dtype)[:, None, None]
        merged = heads.transpose(-3, -2).flatten(-2)  # (B, Lq, H*d)
        out = self.W_o(merged) if self.output_projection else merged
        return out, (dropped if self.weights_after_dropout else weights)


def _bug(name, **knobs):
    return type(name, (_Layer,), {k: staticmethod(v) if callable(v) else v for k, v in knobs.items()})


class LayerWithoutBias(_Layer):
    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__(embed_dim, num_heads, kdim=kdim, vdim=vdim, bias=False, dropout=dropout)


MULTI_HEAD_ATTENTION_LAYER = Exercise(
    id="MultiHeadAttention",
    cases=layer_cases,
    bugs={
        "your layer matches attention without the 1/sqrt(d_k) scale": _bug("NoScale", scale=lambda d, E: 1.0),
        "your layer scales the scores by 1/sqrt(embed_dim) (the model width) instead of 1/sqrt(head_dim)":
            _bug("ScaledByEmbedDim", scale=lambda d, E: math.sqrt(E)),
        "your layer's softmax runs over the query axis instead of the key axis (dim=-1)":
            _bug("SoftmaxOverQueries", softmax_dim=-2),
        "your layer inverts the mask: True must mean 'may attend' (torch.nn.MultiheadAttention's "
        "key_padding_mask is the opposite)": _bug("InvertedMask", inverted_mask=True),
        "your layer gives NaN on fully masked rows (-inf filled in and not set back to 0): they must be "
        "all zero": _bug("NaNRows", fill="-inf", zero_masked=False),
        "your layer gives uniform weights on fully masked rows: set the weights of masked keys to 0 after "
        "the softmax": _bug("UniformRows", zero_masked=False),
        "your layer is missing the output projection W_o": _bug("NoOutputProjection", output_projection=False),
        "your layer uses the key projection for the values: the values are W_v(value)":
            _bug("ValuesFromKeys", values_from_keys=True),
        "your layer splits the heads with a reshape/view but no transpose: positions get mixed into heads":
            _bug("SplitWithoutTranspose", split_without_transpose=True),
        "your layer ignores head_mask: it must scale each head's output before W_o":
            _bug("HeadMaskIgnored", use_head_mask=False),
        "your layer applies dropout in eval mode too: dropout acts in training only (self.training)":
            _bug("DropoutInEval", dropout_always=True),
        "your layer returns the attention weights after dropout: return them before dropout":
            _bug("WeightsAfterDropout", weights_after_dropout=True),
        "your layer has no biases: nn.Linear(..., bias=bias) with bias=True by default": LayerWithoutBias,
    },
)

EXERCISES = (MULTI_HEAD_ATTENTION, PARAMETER_COUNT, MULTI_HEAD_ATTENTION_LAYER)
