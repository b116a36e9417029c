"""Checks of chapter 4 (``layer.py``), PyTorch part: the module ``MultiHeadAttention`` (forward,
masks, head_mask, dropout, gradients, ``from_torch``)."""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from solutions.layer import MultiHeadAttention as ReferenceLayer

from ...spec import Case, Exercise
from .cases import GRAD_TOLERANCE, LINEAR_HINT, LINEAR_TYPES, TOLERANCE, intervention, randn
from .layer import LAYER_PROPERTIES, layer_masks

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


# The parts of the layer a learner writes; each case names the one it checks (the report
# groups the verdicts by part), and differs from the first case in that part's feature alone.
PARTS = ("projections and shapes", "forward", "masks", "dropout", "head_mask", "from_torch")


def layer_cases(rng):
    B, H, L, Lk, d, kdim, vdim = 2, 3, 4, 5, 6, 7, 11
    E = H * d
    all_sizes = dict(B=B, H=H, Lq=L, Lk=Lk, d=d, E=E, kdim=kdim, vdim=vdim)

    def case(name, part, driver="mha_forward", *, dtype="float64", widths="kdim = vdim = E", lengths="Lq = Lk",
             bias=True, mask=None, mask_words="no mask", head_mask=None, dropout=0.0, check="forward", extra=None,
             properties=LAYER_PROPERTIES, tolerance=None, rung=None):
        cross, lk = widths != "kdim = vdim = E", Lk if lengths != "Lq = Lk" else L
        k_in, v_in = (kdim, vdim) if cross else (E, E)
        sizes = {n: v for n, v in all_sizes.items() if (cross or n not in ("kdim", "vdim"))}
        if lk == L:
            sizes = {("L" if n == "Lq" else n): v for n, v in sizes.items() if n != "Lk"}
        inputs = dict(query=randn(rng, (B, L, E), dtype), key=randn(rng, (B, lk, k_in), dtype),
                      value=randn(rng, (B, lk, v_in), dtype), sizes=sizes)
        if driver == "mha_from_torch":
            inputs.update(config=dict(embed_dim=E, num_heads=H, kdim=k_in, vdim=v_in, bias=bias),
                          torch_state=_torch_state(rng, E, k_in, v_in, bias), mask=mask)
        else:
            inputs.update(config=dict(embed_dim=E, num_heads=H, kdim=k_in if cross else None,
                                      vdim=v_in if cross else None, bias=bias, dropout=dropout),
                          state=_linear_state(rng, E, k_in, v_in, bias), dtype=dtype)
            if mask is not None:
                inputs["mask"] = mask
            if head_mask is not None and driver == "mha_forward":
                inputs["head_mask"] = head_mask
        inputs.update(extra or {})
        features = {"part": part, "widths": widths, "lengths": lengths, "dtype": dtype,
                    "bias": "bias=True" if bias else "bias=False", "mask": mask_words,
                    "head_mask": "no head_mask" if head_mask is None else "a head_mask (1, 0, 0.5)",
                    "mode": "eval mode" if dropout == 0 else "dropout=0.5, in eval and in training mode",
                    "check": check}
        return Case(name=name, driver=driver, inputs=inputs, properties=properties,
                    rung=_RUNGS[part] if rung is None else rung,
                    features=features, **(tolerance or TOLERANCE[dtype]))

    square_masks = layer_masks(rng, B, H, L, L)
    padding, causal_, _, _ = layer_masks(rng, B, H, L, Lk)
    head_mask = np.array([1.0, 0.0, 0.5])
    gradients = {"grad_out": randn(rng, (B, L, E)), "grad_weights": randn(rng, (B, H, L, L))}
    return [
        case("E = kdim = vdim, Lq = Lk, no mask", "forward"),
        case("float32", "forward", dtype="float32"),
        case("bias=False", "forward", bias=False),
        case("gradients w.r.t. query, key, value and W_q..W_o (float64)", "forward", extra=gradients,
             check="gradients", tolerance=GRAD_TOLERANCE),
        # The stub's "nn.Linear": a module of its own with weight and bias of the right shapes
        # computes the same outputs, so only the projections' types tell. The first case's inputs
        # (rung 0), the check alone differing: a minimal pair whose hint is the contract.
        case("E = kdim = vdim, Lq = Lk, no mask: W_q..W_o are nn.Linear", "projections and shapes",
             check=LINEAR_TYPES, properties=LAYER_PROPERTIES + ("projections_are_linear",), rung=0),
        case("kdim, vdim != E", "projections and shapes", widths="kdim, vdim != E"),
        case("Lq < Lk", "projections and shapes", lengths="Lq < Lk"),
        case("causal mask (L, L)", "masks", mask=square_masks[1], mask_words="a causal mask (Lq, Lk)"),
        case("mask (B, L, L) with fully masked rows", "masks", mask=square_masks[2],
             mask_words="a mask (B, Lq, Lk) with fully masked rows"),
        case("4-D mask per head (B, H, L, L)", "masks", mask=square_masks[3],
             mask_words="a 4-D mask per head (B, H, Lq, Lk)"),
        case("head_mask (1, 0, 0.5)", "head_mask", head_mask=head_mask),
        case("dropout=0.5: eval mode, weights before dropout, training mode", "dropout", "mha_dropout",
             dropout=0.5, properties=("rows_sum_to_one", "dropout_in_training")),
        case("from_torch, packed in-projection (kdim = vdim = E)", "from_torch", "mha_from_torch", check="from_torch"),
        case("from_torch, kdim and vdim, Lq < Lk, no bias, padding mask (B, 1, Lk)", "from_torch", "mha_from_torch",
             widths="kdim, vdim != E", lengths="Lq < Lk", bias=False, mask=padding,
             mask_words="a padding mask (B, 1, Lk)", check="from_torch"),
        *_with_head_mask_apart(case("kdim, vdim != E, Lq < Lk, causal mask (Lq, Lk), head_mask", "masks",
                                    widths="kdim, vdim != E", lengths="Lq < Lk", mask=causal_,
                                    mask_words="a causal mask (Lq, Lk)", head_mask=head_mask)),
    ]


def _with_head_mask_apart(case):
    """The case, then its copy without the head_mask: a failure there that the copy does not have
    is the head_mask's, not the masks' (``scoring.summary.by_part``)."""
    return [case, intervention(case, "head_mask", "no head_mask", drop=("head_mask",))]


_RUNGS = {"forward": 0, "dropout": 0, "head_mask": 0, "masks": 0, "projections and shapes": 1, "from_torch": 2}


class _Layer(ReferenceLayer):
    """The reference layer with one step changed; each bug below sets one of these knobs."""

    scale = staticmethod(lambda head_dim, embed_dim: math.sqrt(head_dim))
    softmax_dim = -1
    inverted_mask = False
    fill = "min"  # the dtype's lowest value; "-inf" for the NaN bug
    zero_masked = True  # set fully masked rows (and masked keys) to exactly 0 after the softmax
    values_from_keys = False
    keys_with_w_q = False
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
        q, k = self._split(self.W_q(query)), self._split((self.W_q if self.keys_with_w_q else self.W_k)(key))
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


class FromTorchTransposed(_Layer):
    """from_torch copying each weight transposed (w.T): nn.Linear's weight is (out, in), as torch's are."""

    @classmethod
    def from_torch(cls, ref):
        layer = super().from_torch(ref)
        with torch.no_grad():
            for name in ("W_q", "W_k", "W_v", "W_o"):
                w = getattr(layer, name).weight
                if w.shape[0] == w.shape[1]:
                    w.copy_(w.T.clone())
                else:  # a (E, kdim) weight cannot take its transpose: the copy fails
                    raise RuntimeError(f"The size of tensor a ({w.shape[1]}) must match the size of tensor b "
                                       f"({w.shape[0]}) at non-singleton dimension 1")
        return layer


class HeadMaskAfterProjection(_Layer):
    """head_mask applied to the layer's output, after W_o, each head's share of E features."""

    def forward(self, query, key, value, mask=None, head_mask=None):
        out, weights = super().forward(query, key, value, mask, None)
        if head_mask is not None:
            out = out * head_mask.to(out.dtype).repeat_interleave(out.shape[-1] // head_mask.shape[0])
        return out, weights


class HeadMaskOnReturnedWeights(_Layer):
    """head_mask right, but also applied to the weights returned (as Hugging Face's layers do)."""

    def forward(self, query, key, value, mask=None, head_mask=None):
        out, weights = super().forward(query, key, value, mask, head_mask)
        if head_mask is not None:
            weights = weights * head_mask.to(weights.dtype)[:, None, None]
        return out, weights


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
    hints={"kdim, vdim != E": "W_k maps kdim -> E and W_v maps vdim -> E (nn.Linear(kdim, E), nn.Linear(vdim, E))",
           "Lq < Lk": "the scores are (B, H, Lq, Lk): the number of keys comes from key, not from query",
           "float32": "keep the input's dtype",
           LINEAR_TYPES: LINEAR_HINT,
           "bias=False": "bias=False means no bias in any of the four nn.Linear",
           "gradients": "keep every step in torch (no .detach(), .numpy() or new tensors) so gradients flow",
           "a causal mask (Lq, Lk)": "a mask is True where a query may attend; (Lq, Lk) broadcasts over batch and heads",
           "a mask (B, Lq, Lk) with fully masked rows": "a (B, Lq, Lk) mask is shared by the heads (mask[:, None]); "
                                                        "a fully masked row gets all-zero weights",
           "a 4-D mask per head (B, H, Lq, Lk)": "a 4-D mask is per head: use it as it is",
           "a head_mask (1, 0, 0.5)": "head_mask scales each head's output before W_o; the weights returned are "
                                      "the softmax's",
           "mode": "dropout acts on the attention weights in training mode only, and the weights returned are "
                   "those before dropout",
           "check": "from_torch: in_proj_weight holds W_q, W_k, W_v stacked in that order (chunk(3)); with kdim "
                    "or vdim the weights are q_proj_weight, k_proj_weight, v_proj_weight; all are (out, in)"},
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
        "your layer projects the keys with W_q: they go through W_k (whose input width is kdim; W_q takes E, so "
        "with kdim != E your call cannot even run)": _bug("KeysWithWq", keys_with_w_q=True),
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
        "your from_torch copies the weights transposed (w.T): torch's weights and nn.Linear's are both "
        "(out_features, in_features), so copy them as they are": FromTorchTransposed,
        "your layer applies head_mask after the output projection W_o: it scales each head's output before "
        "W_o (heads * head_mask[:, None, None], then merge)": HeadMaskAfterProjection,
        "your layer returns the attention weights multiplied by head_mask: head_mask scales the heads' "
        "outputs only; return the weights of the softmax": HeadMaskOnReturnedWeights,
    },
)

EXERCISES = (MULTI_HEAD_ATTENTION_LAYER,)
