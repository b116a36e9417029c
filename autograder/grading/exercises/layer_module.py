"""Checks of chapter 4 (``layer.py``), PyTorch part: the module ``MultiHeadAttention`` (forward,
masks, head_mask, dropout, gradients, ``from_torch``)."""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from solutions.layer import MultiHeadAttention as ReferenceLayer

from ...spec import Case, Exercise
from .cases import GRAD_TOLERANCE, TOLERANCE, randn
from .layer import LAYER_PROPERTIES, _masks

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
    square = dict(B=B, H=H, L=Lq, d=d, E=E)

    def inputs(dtype="float64", cross=True, bias=True, dropout=0.0):
        k_in, v_in, lk = (kdim, vdim, Lk) if cross else (E, E, Lq)
        config = dict(embed_dim=E, num_heads=H, kdim=k_in if cross else None, vdim=v_in if cross else None,
                      bias=bias, dropout=dropout)
        return dict(config=config, state=_linear_state(rng, E, k_in, v_in, bias), query=randn(rng, (B, Lq, E), dtype),
                    key=randn(rng, (B, lk, k_in), dtype), value=randn(rng, (B, lk, v_in), dtype), dtype=dtype,
                    sizes=sizes if cross else square)

    def case(name, driver, inputs, rung, dtype="float64", properties=LAYER_PROPERTIES, tolerance=None):
        return Case(name=name, driver=driver, inputs=inputs, properties=properties, rung=rung,
                    **(tolerance or TOLERANCE[dtype]))

    padding, causal_, empty_rows, per_head = _masks(rng, B, H, Lq, Lk)
    gradients = {**inputs(), "mask": padding & causal_,
                 "grad_out": randn(rng, (B, Lq, E)), "grad_weights": randn(rng, (B, H, Lq, Lk))}

    def from_torch(cross, bias, mask):
        k_in, v_in = (kdim, vdim) if cross else (E, E)
        config = dict(embed_dim=E, num_heads=H, kdim=k_in, vdim=v_in, bias=bias)
        return dict(config=config, torch_state=_torch_state(rng, E, k_in, v_in, bias), query=randn(rng, (B, Lq, E)),
                    key=randn(rng, (B, Lk, k_in)), value=randn(rng, (B, Lk, v_in)), mask=mask, sizes=sizes)

    return [
        case("kdim = vdim = E, Lq = Lk, no mask", "mha_forward", inputs(cross=False), 0),
        case("kdim = vdim = E, Lq = Lk, float32", "mha_forward", inputs("float32", cross=False), 0, "float32"),
        case("kdim = vdim = E, mask (B, L, L) with fully masked rows", "mha_forward",
             {**inputs(cross=False), "mask": _masks(rng, B, H, Lq, Lq)[2]}, 0),
        case("kdim = vdim = E, dropout=0 in training mode", "mha_forward", {**inputs(cross=False), "train": True}, 0),
        case("kdim, vdim != E, Lq < Lk, causal mask (Lq, Lk)", "mha_forward", {**inputs(), "mask": causal_}, 1),
        case("kdim, vdim != E, float32, padding mask (B, 1, Lk)", "mha_forward", {**inputs("float32"), "mask": padding},
             1, "float32"),
        case("kdim, vdim != E, 4-D mask per head, head_mask (1, 0, 0.5)", "mha_forward",
             {**inputs(), "mask": per_head, "head_mask": np.array([1.0, 0.0, 0.5])}, 1),
        case("kdim, vdim != E, bias=False, causal mask", "mha_forward", {**inputs(bias=False), "mask": causal_}, 1),
        case("dropout=0.5: eval mode, weights before dropout, training mode", "mha_dropout",
             {**inputs(dropout=0.5), "mask": padding}, 1, properties=("rows_sum_to_one", "dropout_in_training")),
        case("gradients w.r.t. query, key, value and W_q..W_o (float64)", "mha_forward", gradients, 1,
             tolerance=GRAD_TOLERANCE),
        case("from_torch, packed in-projection (kdim = vdim = E)", "mha_from_torch", from_torch(False, True, causal_), 2),
        case("from_torch, kdim and vdim, no bias", "mha_from_torch", from_torch(True, False, padding), 2),
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


# Published: masked scores filled with -1e9 (uniform fully masked rows) and every projection
# nn.Linear(d_model, d_model) (kdim = vdim = E assumed) in The Annotated Transformer
# (harvardnlp/annotated-transformer, MultiHeadedAttention); the ladder's first rung is that case.
class FromTorchSwapped(_Layer):
    """from_torch with the packed in-projection's chunks read in the wrong order (k, q, v)."""

    @classmethod
    def from_torch(cls, ref):
        layer = super().from_torch(ref)
        with torch.no_grad():
            for part in ("weight", "bias"):
                q, k = getattr(layer.W_q, part), getattr(layer.W_k, part)
                if q is not None and q.shape == k.shape:
                    q_copy = q.clone()
                    q.copy_(k)
                    k.copy_(q_copy)
        return layer


class LayerWithoutBias(_Layer):
    def __init__(self, embed_dim, num_heads, *, kdim=None, vdim=None, bias=True, dropout=0.0):
        super().__init__(embed_dim, num_heads, kdim=kdim, vdim=vdim, bias=False, dropout=dropout)


MULTI_HEAD_ATTENTION_LAYER = Exercise(
    id="MultiHeadAttention",
    cases=layer_cases,
    ladder=(("E = kdim = vdim and Lq = Lk", ""),
            ("kdim != E, vdim != E and Lq != Lk", "W_k maps kdim -> E and W_v maps vdim -> E (nn.Linear(kdim, E), "
             "nn.Linear(vdim, E)), and the scores are (B, H, Lq, Lk)"),
            ("from_torch", "in_proj_weight holds W_q, W_k, W_v stacked in that order (chunk(3)); with kdim or "
             "vdim the weights are q_proj_weight, k_proj_weight, v_proj_weight")),
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
        "your from_torch swaps the query and key projections: in_proj_weight.chunk(3) gives W_q, W_k, W_v in "
        "that order": FromTorchSwapped,
    },
)

EXERCISES = (MULTI_HEAD_ATTENTION_LAYER,)
