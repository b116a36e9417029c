"""Checks of chapter 4 (``layer.py``), NumPy part: ``multi_head_attention`` and ``parameter_count``
(the PyTorch module's are in ``layer_module.py``)."""
from __future__ import annotations

import math

import numpy as np

from solutions.attention import scaled_dot_product_attention
from solutions.heads import merge_heads, split_heads
from solutions.layer import parameter_count as reference_parameter_count

from ...spec import Exercise
from .cases import call_case, causal, randn

# --- multi_head_attention (NumPy) --------------------------------------------------------------


def _params(rng, dtype, E_q, E_k, E_v, H, d_k, d_v, E_out, bias=True):
    """Projection weights ``x @ W`` scaled by 1/sqrt(fan-in), so that scores stay O(1)."""
    shapes = {"q": (E_q, H * d_k), "k": (E_k, H * d_k), "v": (E_v, H * d_v), "o": (H * d_v, E_out)}
    params = {f"W_{n}": randn(rng, s, dtype, 1 / math.sqrt(s[0])) for n, s in shapes.items()}
    if bias:
        params.update({f"b_{n}": randn(rng, s[1:], dtype, 0.5) for n, s in shapes.items()})
    return params


def layer_masks(rng, B, H, Lq, Lk):
    """The layer checks' masks: padding (B, 1, Lk), end-aligned causal (Lq, Lk), a (B, Lq, Lk)
    mask with a fully masked row in each sequence, and a 4-D per-head mask (B, H, Lq, Lk)."""
    padding = (np.arange(Lk) < rng.integers(1, Lk + 1, B)[:, None])[:, None, :]  # (B, 1, Lk)
    empty_rows = rng.random((B, Lq, Lk)) < 0.6
    empty_rows[..., 0] = True
    empty_rows[np.arange(B), rng.integers(0, Lq, B)] = False
    per_head = rng.random((B, H, Lq, Lk)) < 0.7
    per_head[..., -1] = True
    return padding, causal(Lq, Lk), empty_rows, per_head


LAYER_PROPERTIES = ("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged")


def mha_function_cases(rng):
    B, H = 2, 3

    def case(name, dtype="float64", mask=None, bias=True, heads=H, same_input=True, Lq=5, Lk=5, E_q=8, E_k=8,
             E_v=8, d_k=4, d_v=4, E_out=10, rung=0, mask_words="no mask"):
        if same_input:  # one input for query, key and value: the simplest rung of the ladder
            x = randn(rng, (B, Lq, E_q), dtype)
            query, key, value = x, x.copy(), x.copy()
        else:
            query, key, value = (randn(rng, (B, n, e), dtype) for n, e in ((Lq, E_q), (Lk, E_k), (Lk, E_v)))
        sizes = dict(B=B, H=heads, Lq=Lq, Lk=Lk, E_q=E_q, E_k=E_k, E_v=E_v, d_k=d_k, d_v=d_v, E_out=E_out)
        sizes.update({"H*d_k": heads * d_k, "H*d_v": heads * d_v})
        features = {"heads": "one head" if heads == 1 else "several heads", "dtype": dtype, "mask": mask_words,
                    "bias": "biases" if bias else "no biases",
                    "input": "query = key = value" if same_input else "distinct query, key and value",
                    "lengths": "Lq = Lk" if Lq == Lk else "Lq != Lk",
                    "key widths": "E_k = E_v = E_q" if E_q == E_k == E_v else "E_k, E_v != E_q",
                    "head sizes": "d_k = d_v" if d_k == d_v else "d_k != d_v"}
        args = [query, key, value, _params(rng, dtype, E_q, E_k, E_v, heads, d_k, d_v, E_out, bias), heads]
        return call_case(name, "multi_head_attention", args, {} if mask is None else {"mask": mask},
                         returns=("out", "weights"), sizes=sizes, dtype=dtype, properties=LAYER_PROPERTIES,
                         rung=rung, features=features)

    cross = dict(same_input=False, Lq=4, Lk=5, E_q=8, E_k=9, E_v=10, d_k=6, d_v=7, E_out=11, rung=1)
    padding, _, empty_rows, _ = layer_masks(rng, B, H, 5, 5)
    _, causal_, _, per_head = layer_masks(rng, B, H, 4, 5)
    return [
        case("self-attention, 3 heads, float64"),
        case("self-attention, one head", heads=1),
        case("self-attention, float32", "float32"),
        case("self-attention, padding mask (B, 1, L)", mask=padding, mask_words="a padding mask (B, 1, Lk)"),
        case("self-attention, mask (B, L, L) with fully masked rows", mask=empty_rows,
             mask_words="a mask (B, Lq, Lk) with fully masked rows"),
        case("self-attention, no biases", bias=False),
        case("distinct query, key and value arrays", same_input=False),
        case("Lq != Lk", same_input=False, Lq=4, rung=1),
        case("E_k, E_v != E_q", same_input=False, E_k=9, E_v=10, rung=1),
        case("d_k != d_v", same_input=False, d_v=6, rung=1),
        case("cross-attention, float32, causal mask (Lq, Lk)", "float32", causal_, mask_words="a causal mask (Lq, Lk)",
             **cross),
        case("cross-attention, 4-D mask per head (B, H, Lq, Lk)", mask=per_head,
             mask_words="a 4-D mask per head (B, H, Lq, Lk)", **cross),
    ]


# Published: one sequence length for queries, keys and values (Lq = Lk) and one width d_model
# in PTSown0222/TensorTonic-Solutions (transformers-multi-head-attention.py): right on the
# ladder's first rung (self-attention), a crash from the second on.
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
    ladder=(("self-attention (query = key = value, one width E, d_k = d_v)", ""),
            ("cross-attention (E_q, E_k, E_v, E_out and d_k, d_v all different, Lq != Lk)",
             "W_k reads E_k features and W_v reads E_v; the heads' values have d_v features; W_o maps H*d_v "
             "to E_out")),
    hints={"Lq != Lk": "the scores are (B, H, Lq, Lk): the number of keys comes from key, not from query",
           "E_k, E_v != E_q": "W_k reads E_k features and W_v reads E_v",
           "d_k != d_v": "the heads' values have d_v features, and W_o maps H*d_v to E_out",
           "distinct query, key and value": "queries come from query, keys from key, values from value",
           "a mask (B, Lq, Lk) with fully masked rows": "a (B, Lq, Lk) mask is shared by the heads: give it a head "
                                                        "axis, mask[:, None]; a fully masked row gets all-zero weights",
           "a padding mask (B, 1, Lk)": "a (B, 1, Lk) mask is shared by the heads: give it a head axis, mask[:, None]",
           "no biases": "a missing bias means no bias",
           "float32": "keep the input's dtype",
           "one head": "one head is the whole width: H*d_k features in one head"},
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
        given = dict(zip(("value_dim", "output_dim", "bias"), args[3:]), **kwargs)
        features = {"heads": "one head" if args[1] == 1 else "several heads",
                    "value_dim": "value_dim given" if "value_dim" in given else "value_dim defaulted",
                    "output_dim": "output_dim given" if "output_dim" in given else "output_dim defaulted",
                    "bias": "bias=False" if given.get("bias", True) is False else "bias=True",
                    "call": "all six arguments positional" if len(args) == 6 else "keyword arguments"}
        return call_case(name, "parameter_count", list(args), kwargs, rung=rung, features=features)

    def dims(n):  # distinct sizes, so that a swapped argument shows
        return [int(x) for x in rng.choice(np.arange(3, 130), n, replace=False)]

    q, k, v, o = dims(4)
    return [
        case("query_dim, num_heads, key_dim; the rest defaulted", q, int(rng.integers(2, 9)), k),
        case("one head, the rest defaulted", dims(1)[0], 1, k),
        case("value_dim given", q, int(rng.integers(2, 9)), k, value_dim=v, rung=1),
        case("output_dim given", o, int(rng.integers(2, 9)), k, output_dim=q, rung=1),
        case("value_dim and output_dim given", v, int(rng.integers(2, 9)), k, value_dim=q, output_dim=o, rung=1),
        case("bias=False", q, int(rng.integers(2, 9)), o, bias=False, rung=2),
        case("output_dim given, bias=False", k, int(rng.integers(2, 9)), v, output_dim=o, bias=False, rung=2),
        case("all six arguments positional", *dims(4)[:1], int(rng.integers(2, 9)), *dims(3), True, rung=2),
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


def parameter_count_ignores_value_dim(query_dim, num_heads, key_dim, value_dim=None, output_dim=None, bias=True):
    return reference_parameter_count(query_dim, num_heads, key_dim, None, output_dim, bias)


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
    hints={"value_dim given": "W_v has num_heads * value_dim outputs, and W_o reads them",
           "output_dim given": "W_o maps num_heads * value_dim features to output_dim",
           "bias=False": "without biases only the four weight matrices count",
           "bias=True": "each projection has one bias per output feature: num_heads * key_dim for W_q and W_k, "
                        "num_heads * value_dim for W_v, output_dim for W_o",
           "all six arguments positional": "the arguments come in the order query_dim, num_heads, key_dim, "
                                           "value_dim, output_dim, bias",
           "one head": "key_dim and value_dim are per head"},
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
        "your count ignores value_dim: W_v has num_heads * value_dim outputs (value_dim defaults to key_dim only "
        "when it is not given)": parameter_count_ignores_value_dim,
    },
)

EXERCISES = (MULTI_HEAD_ATTENTION, PARAMETER_COUNT)
