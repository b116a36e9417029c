"""Checks of chapter 1 (``attention.py``): ``softmax`` and ``scaled_dot_product_attention``."""
from __future__ import annotations

import math

import numpy as np

from solutions.masking import masked_softmax

from ...spec import Exercise
from . import cases
from .cases import call_case, randn

PROBABILITIES = ("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged")


# --- softmax -----------------------------------------------------------------------------------

def softmax_cases(rng):
    def logits(shape, dtype, spread=1e4):
        # Each row sits at +spread, -spread or 0: exp overflows or underflows unless the
        # row's own max is subtracted.
        offsets = spread * rng.integers(-1, 2, size=shape[:-1] + (1,))
        return (offsets + 3 * rng.standard_normal(shape)).astype(dtype)

    def case(name, x, dtype, rung, scale="logits of a few units", **kw):
        features = {"rank": f"{x.ndim}-D input", "dtype": dtype, "scale": scale,
                    "axis": {None: "the last axis", 0: "axis=0", 1: "axis=1 (a middle axis)"}[kw.get("axis")]}
        return call_case(name, "softmax", [x], kw, dtype=dtype, properties=("rows_sum_to_one", "inputs_unchanged"),
                         sizes=dict(zip("BLN", x.shape)), rung=rung, features=features)

    far = np.stack([1e4 * (1 + rng.random()) - np.array([0.0, 1.0, 3.0]), 2 * rng.standard_normal(3)])
    large = "logits of ±1e4 (±100 in float32)"
    return [
        case("2-D (L, N) float64, last axis", randn(rng, (4, 5), scale=2), "float64", 0),
        case("one row (1-D input)", randn(rng, (6,), scale=3), "float64", 0),
        case("3-D float64, last axis", randn(rng, (2, 3, 5), scale=2), "float64", 0),
        case("3-D float32, last axis", randn(rng, (3, 4, 6), "float32", scale=2), "float32", 1),
        case("axis=0 of a 2-D array", randn(rng, (4, 7)), "float64", 2, axis=0),
        case("axis=1 of a 3-D array", randn(rng, (2, 5, 3)), "float64", 2, axis=1),
        case("logits of ±1e4, float64", logits((4, 5), "float64"), "float64", 3, scale=large),
        # float32: ±100 already overflows exp (beyond 88.7), and keeps a log-sum-exp softmax
        # exact to ulp(100) = 7.6e-6, within the float32 tolerance.
        case("logits of ±100, float32", logits((3, 6), "float32", spread=100), "float32", 3, scale=large),
        case("one row near 1e4, one near 0", far, "float64", 3, scale="one row near 1e4 and one near 0"),
        # Rows whose own values span ±1e4 (the others sit near one value): a shift by anything but
        # the row's max (its min, its mean) overflows exp here, where it would pass on the rows above.
        case("rows spanning -1e4 to 1e4", np.stack([rng.permutation([1e4, -1e4, 0.0, 1.0]) + rng.standard_normal(4)
                                                    for _ in range(3)]), "float64", 3, scale="rows spanning -1e4 to 1e4"),
    ]


# Published: no max subtraction in Fangzhou-Code/Learn_AI (self_attention.py, soft_max) and
# pluu2/MLhelper (attention.py, softmaxT, which also sums over axis 0).
def softmax_no_max_subtraction(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_last_axis_only(x, axis=-1):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_axis_0(x, axis=-1):  # pluu2/MLhelper attention.py: np.sum(..., axis=0)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def softmax_global_max(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


def softmax_global_sum(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum()


def softmax_subtracts_sum(x, axis=-1):  # a learner's: the normalisation as a shift, as for the max
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e - e.sum(axis=axis, keepdims=True)


SOFTMAX = Exercise(
    id="softmax",
    cases=softmax_cases,
    ladder=(("float64 arrays over the last axis", ""), ("float32 input", "keep the input's dtype"),
            ("an axis other than the last", "take the max and the sum along `axis`, with keepdims=True"),
            ("large logits (±1e4 in float64, ±100 in float32)", "subtract each row's own max before exp")),
    hints={"float32": "keep the input's dtype",
           "axis=0": "take the max and the sum along `axis`, with keepdims=True",
           "axis=1 (a middle axis)": "take the max and the sum along `axis`, with keepdims=True",
           "logits of ±1e4 (±100 in float32)": "subtract each row's own max before exp",
           "one row near 1e4 and one near 0": "subtract each row's own max, not the whole array's",
           "rows spanning -1e4 to 1e4": "subtract each row's own max before exp",
           "1-D input": "a 1-D input is one row"},
    bugs={
        # No magnitude in the sentence: it is attached to the ±100 and the ±1e4 cases alike.
        "your output matches softmax without subtracting the max first (exp of a large logit "
        "overflows to inf, then inf/inf = NaN)": softmax_no_max_subtraction,
        "your output matches softmax over the last axis whatever `axis` says": softmax_last_axis_only,
        "your output matches softmax over axis 0 whatever `axis` says (the default is the last axis, -1)":
            softmax_axis_0,
        "your output matches softmax shifted by the max of the whole array instead of each row's max "
        "(rows far below it underflow to 0/0)": softmax_global_max,
        "your output matches softmax with the row's sum subtracted from exp instead of dividing exp by it: "
        "normalise with e / e.sum(axis, keepdims=True)": softmax_subtracts_sum,
        "your output matches softmax normalised by the sum of the whole array instead of each row's sum":
            softmax_global_sum,
    },
)


# --- scaled dot-product attention --------------------------------------------------------------

def attention_cases(rng):
    B, H, Lq, Lk, d_k, d_v, L, d = 2, 3, 4, 5, 6, 7, 5, 4
    sizes = dict(B=B, H=H, Lq=Lq, Lk=Lk, d_k=d_k, d_v=d_v)
    simple = dict(B=B, L=L, d=d)

    def qkv(dtype, lead=(B, H), scale=1.0):
        return [randn(rng, lead + (Lq, d_k), dtype, scale), randn(rng, lead + (Lk, d_k), dtype, scale),
                randn(rng, lead + (Lk, d_v), dtype)]

    def self_qkv(dtype):  # (B, L, d): Lq = Lk and d_k = d_v
        return [randn(rng, (B, L, d), dtype) for _ in range(3)]

    def case(name, args, dtype, mask=None, rung=1, sizes=sizes, mask_words="no mask", scale="scores of a few units"):
        q, k, v = args
        features = {"rank": f"{q.ndim}-D inputs", "lengths": "Lq = Lk" if q.shape[-2] == k.shape[-2] else "Lq != Lk",
                    "head sizes": "d_k = d_v" if k.shape[-1] == v.shape[-1] else "d_k != d_v", "dtype": dtype,
                    "mask": mask_words, "scale": scale}
        kwargs = {} if mask is None else {"mask": mask}
        return call_case(name, "scaled_dot_product_attention", args, kwargs, returns=("out", "weights"),
                         sizes=sizes, dtype=dtype, properties=PROBABILITIES, rung=rung, features=features)

    def empty_rows(shape):
        mask = rng.random(shape) < 0.6
        rows = [tuple(rng.integers(0, n) for n in shape[:-1]) for _ in range(3)]
        for row in rows:
            mask[row] = False
        return mask

    padding = (np.arange(Lk) < rng.integers(1, Lk, B)[:, None])[:, None, None, :]  # (B, 1, 1, Lk)
    # float32 large scores: integer inputs and d_k = 4 (sqrt 2) make every score exact in
    # float32 whatever the order of the sums or of the scaling. Scores up to ±128 overflow exp
    # in float32 (beyond 88.7) yet stay where a log-sum-exp softmax is exact to the tolerance.
    small = dict(B=B, Lq=3, Lk=5, d_k=4, d_v=6)
    exact = [(4 * rng.integers(-2, 3, (B, 3, 4))).astype("float32"),
             (4 * rng.integers(-2, 3, (B, 5, 4))).astype("float32"), randn(rng, (B, 5, 6), "float32")]
    large = "scores of ~1e4 (~100 in float32)"
    square4 = dict(B=B, H=H, L=L, d=d)
    return [
        case("3-D (B, L, d), no mask, float64", self_qkv("float64"), "float64", rung=0, sizes=simple),
        case("3-D (B, L, d), float32", self_qkv("float32"), "float32", rung=0, sizes=simple),
        case("3-D (B, L, d), mask (B, L, L) with fully masked rows", self_qkv("float64"), "float64",
             empty_rows((B, L, L)), rung=0, sizes=simple, mask_words="a mask with fully masked rows"),
        case("4-D (B, H, L, d), Lq = Lk, d_k = d_v", [randn(rng, (B, H, L, d)) for _ in range(3)], "float64",
             sizes=square4),
        case("3-D, Lq < Lk", [randn(rng, (B, Lq, d)), randn(rng, (B, Lk, d)), randn(rng, (B, Lk, d))], "float64",
             sizes=dict(B=B, Lq=Lq, Lk=Lk, d=d)),
        case("3-D, d_k != d_v", [randn(rng, (B, L, d)), randn(rng, (B, L, d)), randn(rng, (B, L, d_v))], "float64",
             sizes=dict(B=B, L=L, d_k=d, d_v=d_v)),
        case("4-D (B, H, Lq, d_k), Lq < Lk, d_k != d_v, no mask", qkv("float64"), "float64"),
        case("4-D float32, padding mask (B, 1, 1, Lk)", qkv("float32"), "float32", padding,
             mask_words="a padding mask (B, 1, 1, Lk)"),
        case("4-D, causal mask (Lq, Lk)", qkv("float64"), "float64", cases.causal(Lq, Lk),
             mask_words="a causal mask (Lq, Lk)"),
        case("4-D, mask (B, H, Lq, Lk) with fully masked rows", qkv("float64"), "float64", empty_rows((B, H, Lq, Lk)),
             mask_words="a mask with fully masked rows"),
        case("4-D, scores up to ~2e4, float64", qkv("float64", scale=80.0), "float64", rung=2, scale=large),
        case("3-D, scores up to ±128, float32", exact, "float32", rung=2, sizes=small, scale=large),
    ]


def _softmax(scores):
    """A plain stable softmax over the key axis, with no guard for all -inf rows."""
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _attention(q, k, v, mask=None, *, scale=None, weights_of=masked_softmax):
    """Attention with one step swapped out; each bug below is one such swap."""
    scores = q @ np.swapaxes(k, -1, -2) / (math.sqrt(q.shape[-1]) if scale is None else scale)  # (..., Lq, Lk)
    weights = weights_of(scores, mask)
    return weights @ v, weights


def _filled_with(value):
    def weights_of(scores, mask):
        return _softmax(scores if mask is None else np.where(mask, scores, value).astype(scores.dtype))
    return weights_of


# Published: no scale and a softmax over the queries (axis 0 of (Lq, Lk) scores) in
# pluu2/MLhelper (attention.py); no scale in Fangzhou-Code/Learn_AI (self_attention.py); masked
# scores filled with -1e9, so fully masked rows are uniform, in The Annotated Transformer
# (harvardnlp/annotated-transformer, `attention`) and its many copies.
def attention_no_scale(q, k, v, mask=None):
    return _attention(q, k, v, mask, scale=1)


def attention_scaled_by_d_k(q, k, v, mask=None):
    return _attention(q, k, v, mask, scale=q.shape[-1])


def attention_scaled_by_d_v(q, k, v, mask=None):
    return _attention(q, k, v, mask, scale=math.sqrt(v.shape[-1]))


def attention_softmax_over_queries(q, k, v, mask=None):
    def weights_of(scores, mask):
        mask = None if mask is None else np.swapaxes(np.broadcast_to(mask, scores.shape), -1, -2)
        return np.swapaxes(masked_softmax(np.swapaxes(scores, -1, -2), mask), -1, -2)
    return _attention(q, k, v, mask, weights_of=weights_of)


def attention_inverted_mask(q, k, v, mask=None):
    return _attention(q, k, v, mask, weights_of=lambda s, m: masked_softmax(s, None if m is None else ~m))


def attention_masked_after_softmax(q, k, v, mask=None):
    return _attention(q, k, v, mask, weights_of=lambda s, m: _softmax(s) * (1 if m is None else m))


def attention_filled_with_zero(q, k, v, mask=None):
    return _attention(q, k, v, mask, weights_of=_filled_with(0.0))


def attention_filled_with_minus_inf(q, k, v, mask=None):
    return _attention(q, k, v, mask, weights_of=_filled_with(-np.inf))


def attention_filled_with_large_negative(q, k, v, mask=None):
    return _attention(q, k, v, mask, weights_of=_filled_with(-1e6))


def attention_scale_multiplies(q, k, v, mask=None):
    return _attention(q, k, v, mask, scale=1 / math.sqrt(q.shape[-1]))


def attention_scaled_by_queries(q, k, v, mask=None):  # q.shape[-2] where q.shape[-1] was meant
    return _attention(q, k, v, mask, scale=math.sqrt(q.shape[-2]))


def attention_causal_when_unmasked(q, k, v, mask=None):
    """A learner's: a causal mask applied where no mask is given (the decoder's habit)."""
    if mask is None:
        lq, lk = q.shape[-2], k.shape[-2]
        mask = np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq)
    return _attention(q, k, v, mask)


def attention_without_max_subtraction(q, k, v, mask=None):
    def weights_of(scores, mask):
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(scores) if mask is None else np.where(mask, np.exp(scores), 0)
            return (e / e.sum(axis=-1, keepdims=True)).astype(scores.dtype)
    return _attention(q, k, v, mask, weights_of=weights_of)


SCALED_DOT_PRODUCT_ATTENTION = Exercise(
    id="scaled_dot_product_attention",
    cases=attention_cases,
    ladder=(("3-D inputs (B, L, d) with Lq = Lk and d_k = d_v", ""),
            ("a head axis, Lq != Lk and d_k != d_v", "scores are (..., Lq, Lk) = q @ k^T over the last two "
             "axes only (swapaxes(-1, -2), not .T), and the output takes d_v features from v"),
            ("scores of ~1e4 (~100 in float32)", "subtract each row's max before exp")),
    hints={"4-D inputs": "scores are (..., Lq, Lk) = q @ k^T over the last two axes only (swapaxes(-1, -2), not .T)",
           "Lq != Lk": "the scores are (..., Lq, Lk): queries along one axis, keys along the other",
           "d_k != d_v": "scale by sqrt(d_k), the queries' width, and the output takes d_v features from v",
           "float32": "keep the input's dtype",
           "a mask with fully masked rows": "masked keys get weight exactly 0, and a fully masked row all zeros",
           "a causal mask (Lq, Lk)": "the mask broadcasts against the scores (..., Lq, Lk)",
           "scores of ~1e4 (~100 in float32)": "subtract each row's max before exp"},
    uses=("softmax", "masked_softmax"),
    bugs={
        "your output matches attention without the 1/sqrt(d_k) scale": attention_no_scale,
        "your output matches attention scaled by 1/d_k instead of 1/sqrt(d_k)": attention_scaled_by_d_k,
        "your output matches attention scaled by 1/sqrt(d_v) instead of 1/sqrt(d_k)": attention_scaled_by_d_v,
        "your output matches attention with the softmax over the query axis instead of the key axis":
            attention_softmax_over_queries,
        "your output matches attention with the mask polarity inverted (True must mean 'may attend')":
            attention_inverted_mask,
        "your output matches attention masked after the softmax (masked weights zeroed but the rows "
        "not renormalised): mask the scores before the softmax": attention_masked_after_softmax,
        "your output matches attention with masked scores filled with 0 instead of -inf "
        "(a score of 0 still gets weight)": attention_filled_with_zero,
        "your output matches attention with -inf filled in and no guard: fully masked rows become NaN "
        "(they must be all zero)": attention_filled_with_minus_inf,
        "your output matches attention with masked scores filled with a large negative number: fully "
        "masked rows get uniform weights (they must be all zero)": attention_filled_with_large_negative,
        "your output matches attention with the scores multiplied by sqrt(d_k): divide them by it":
            attention_scale_multiplies,
        "your output matches attention scaled by the square root of the number of queries (q.shape[-2]): "
        "the scale is sqrt(d_k), q.shape[-1]": attention_scaled_by_queries,
        "your output matches attention with a causal mask where none is given: without a mask every query "
        "attends to every key": attention_causal_when_unmasked,
        "your output matches attention with a softmax that does not subtract the max (exp overflows on "
        "large scores)": attention_without_max_subtraction,
    },
)

EXERCISES = (SOFTMAX, SCALED_DOT_PRODUCT_ATTENTION)
