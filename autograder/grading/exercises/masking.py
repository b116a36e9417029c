"""Checks of chapter 2 (``masking.py``): ``padding_mask``, ``causal_mask``, ``masked_softmax``."""
from __future__ import annotations

import numpy as np

from solutions.masking import causal_mask as reference_causal_mask

from ...spec import Exercise
from .cases import call_case, randn

# --- padding_mask ------------------------------------------------------------------------------


def padding_cases(rng):
    def case(name, valid_lens, num_keys, sizes):
        return call_case(name, "padding_mask", [valid_lens, num_keys], sizes=sizes, properties=("inputs_unchanged",))

    B, Lq, Lk = 3, 4, 6
    per_query = rng.integers(0, Lk + 1, (2, Lq))
    per_query[0, 0], per_query[1, 1] = 0, Lk  # an empty row and a full one
    return [
        case("(B,) lengths, one of them 0 and one full", np.array([2, 0, Lk]), Lk, dict(B=B, Lk=Lk)),
        case("(B,) lengths in int32", rng.integers(1, Lk, B).astype(np.int32), Lk, dict(B=B, Lk=Lk)),
        case("(B, Lq) lengths, one per query", per_query, Lk, dict(B=2, Lq=Lq, Lk=Lk)),
        case("(B,) lengths, a single key", np.array([1, 0, 1, 1, 0]), 1, dict(B=5)),
        case("(B,) lengths all below num_keys", np.array([3, 5]), 7, dict(B=2, Lk=7)),
    ]


def _padding(valid_lens, num_keys, below=np.less, query_axis=True):
    valid_lens = np.asarray(valid_lens)
    mask = below(np.arange(num_keys), valid_lens[..., None])  # (B, Lk) or (B, Lq, Lk)
    return mask[:, None, :] if query_axis and valid_lens.ndim == 1 else mask


def padding_mask_less_equal(valid_lens, num_keys):
    return _padding(valid_lens, num_keys, below=np.less_equal)


def padding_mask_inverted(valid_lens, num_keys):
    return ~_padding(valid_lens, num_keys)


def padding_mask_no_query_axis(valid_lens, num_keys):
    return _padding(valid_lens, num_keys, query_axis=False)


def padding_mask_query_axis_always(valid_lens, num_keys):
    return _padding(valid_lens, num_keys, query_axis=False)[:, None]


PADDING_MASK = Exercise(
    id="padding_mask",
    cases=padding_cases,
    bugs={
        "your mask matches `key <= valid_len`: the valid keys are 0 .. valid_len - 1, so use `<`":
            padding_mask_less_equal,
        "your mask is inverted: True must mean 'may attend' (a valid key), not 'padding'": padding_mask_inverted,
        "your mask has shape (B, Lk) for (B,) lengths: add the query axis, (B, 1, Lk), so it broadcasts "
        "over the queries": padding_mask_no_query_axis,
        "your mask adds a query axis to (B, Lq) lengths too: those already give (B, Lq, Lk)":
            padding_mask_query_axis_always,
    },
)


# --- causal_mask -------------------------------------------------------------------------------

def causal_cases(rng):
    def case(name, *args):
        sizes = dict(Lq=args[0], Lk=args[-1]) if args[0] != args[-1] else dict(L=args[0])
        return call_case(name, "causal_mask", list(args), sizes=sizes)

    return [
        case("square, num_keys defaulted", 5),
        case("square, num_keys given", 4, 4),
        case("Lq < Lk: queries aligned to the end of the keys", 3, 7),
        case("one new token against a cache of 6", 1, 6),
        case("Lq > Lk: the first queries see nothing", 6, 4),
        case("one query, one key", 1),
    ]


def _causal(num_queries, num_keys=None, shift=0, relation=np.less_equal):
    num_keys = num_queries if num_keys is None else num_keys
    rows = np.arange(num_queries)[:, None] + (num_keys - num_queries) + shift  # (Lq, 1)
    return relation(np.arange(num_keys)[None, :], rows)  # (Lq, Lk)


def causal_mask_strict(num_queries, num_keys=None):
    return _causal(num_queries, num_keys, relation=np.less)


def causal_mask_one_ahead(num_queries, num_keys=None):
    return _causal(num_queries, num_keys, shift=1)


def causal_mask_transposed(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    return reference_causal_mask(num_keys, num_queries).T


def causal_mask_start_aligned(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    return np.arange(num_keys)[None, :] <= np.arange(num_queries)[:, None]  # np.tri(Lq, Lk)


def causal_mask_inverted(num_queries, num_keys=None):
    return ~_causal(num_queries, num_keys)


CAUSAL_MASK = Exercise(
    id="causal_mask",
    cases=causal_cases,
    bugs={
        "your mask is off by one: it hides the diagonal (j < i); a query may see its own key (j <= i)":
            causal_mask_strict,
        "your mask is off by one: it lets each query see the next key (j <= i + 1)": causal_mask_one_ahead,
        "your mask is transposed: query i must see keys j <= i, not keys j >= i": causal_mask_transposed,
        "your mask is aligned to the start of the keys (j <= i): for Lq != Lk the queries are the last "
        "Lq positions, so query i sees j <= i + (Lk - Lq)": causal_mask_start_aligned,
        "your mask is inverted: True must mean 'may attend' (the past), not 'the future'": causal_mask_inverted,
    },
)


# --- masked_softmax ----------------------------------------------------------------------------

def masked_softmax_cases(rng):
    B, H, Lq, Lk = 2, 3, 4, 5
    sizes = dict(B=B, H=H, Lq=Lq, Lk=Lk)

    def case(name, scores, mask, dtype):
        return call_case(name, "masked_softmax", [scores, mask], sizes=sizes, dtype=dtype,
                         properties=("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged"))

    def scores(dtype, scale=2.0):
        return randn(rng, (B, H, Lq, Lk), dtype, scale)

    def no_empty_rows(p):
        mask = rng.random((B, H, Lq, Lk)) < p
        mask[..., 0] = True  # every row keeps a key
        return mask

    empty_rows = no_empty_rows(0.5)
    empty_rows[0, 0, 1] = empty_rows[1, 2, 3] = empty_rows[1, 1, 0] = False
    padding = (np.arange(Lk) < np.array([2, 4])[:, None])[:, None, None, :]  # (B, 1, 1, Lk)
    causal = np.arange(Lk)[None, :] <= np.arange(Lq)[:, None] + (Lk - Lq)  # (Lq, Lk)
    def extreme(spread, dtype):
        # Rows at +spread, -spread or 0, and masked scores at 3 * spread, far above the others:
        # they must not take the weight, nor overflow. float32 uses spread 100 (exp overflows
        # beyond 88.7), where a log-sum-exp softmax stays exact to ulp(100) = 7.6e-6.
        x = spread * rng.integers(-1, 2, (B, H, Lq, 1)) + 3 * rng.standard_normal((B, H, Lq, Lk))
        x[..., 1] = np.where(extreme_mask[..., 1], x[..., 1], 3 * spread)
        return x.astype(dtype)

    extreme_mask = no_empty_rows(0.6)
    return [
        case("float64, (B, H, Lq, Lk) mask", scores("float64"), no_empty_rows(0.6), "float64"),
        case("float32 stays float32, padding mask (B, 1, 1, Lk)", scores("float32"), padding, "float32"),
        case("float64, fully masked rows", scores("float64"), empty_rows, "float64"),
        case("float32, fully masked rows", scores("float32"), empty_rows, "float32"),
        case("float32, causal mask (Lq, Lk) broadcast", scores("float32"), causal, "float32"),
        case("mask None is a plain softmax", scores("float64"), None, "float64"),
        case("extreme scores (±1e4, masked ones at 3e4), float64", extreme(1e4, "float64"), extreme_mask, "float64"),
        case("large scores (±100, masked ones at 300), float32", extreme(100, "float32"), extreme_mask, "float32"),
    ]


def _exp_normalise(scores, keep=None):
    """exp(scores - row max) / row sum over the last axis, optionally zeroing entries first."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        e = e if keep is None else e * keep
        return e / e.sum(axis=-1, keepdims=True)


def _full(mask, scores):
    return np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)


def masked_softmax_inverted(scores, mask):
    from solutions.masking import masked_softmax
    return masked_softmax(scores, ~_full(mask, scores))


def masked_softmax_after(scores, mask):
    return _exp_normalise(scores) * _full(mask, scores)


def masked_softmax_fill_zero(scores, mask):
    return _exp_normalise(np.where(_full(mask, scores), scores, 0).astype(scores.dtype))


def masked_softmax_fill_minus_inf(scores, mask):
    return _exp_normalise(np.where(_full(mask, scores), scores, -np.inf).astype(scores.dtype))


def masked_softmax_fill_large_negative(scores, mask):
    return _exp_normalise(np.where(_full(mask, scores), scores, -1e9).astype(scores.dtype))


def masked_softmax_no_max_subtraction(scores, mask):
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.where(_full(mask, scores), np.exp(scores), 0).astype(scores.dtype)
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total > 0, total, 1)


def masked_softmax_no_max_subtraction_multiplied(scores, mask):
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(scores) * _full(mask, scores)  # exp(large masked score) = inf, inf * 0 = NaN
        return e / e.sum(axis=-1, keepdims=True)


def masked_softmax_wrong_axis(scores, mask):
    from solutions.masking import masked_softmax
    flip = lambda x: np.swapaxes(x, -1, -2)  # noqa: E731
    return flip(masked_softmax(flip(scores), flip(_full(mask, scores))))


MASKED_SOFTMAX = Exercise(
    id="masked_softmax",
    cases=masked_softmax_cases,
    bugs={
        "your output matches a masked softmax with the mask polarity inverted (True must mean 'may attend')":
            masked_softmax_inverted,
        "your output matches masking after the softmax: the masked weights are zeroed but the rows are not "
        "renormalised (mask the scores before the softmax)": masked_softmax_after,
        "your output matches masked scores filled with 0 instead of -inf (a score of 0 still gets weight)":
            masked_softmax_fill_zero,
        "your output matches masked scores filled with -inf and no guard: fully masked rows become NaN "
        "(they must be all zero)": masked_softmax_fill_minus_inf,
        "your output matches masked scores filled with a large negative number: fully masked rows get "
        "uniform weights, an average over padding (they must be all zero)": masked_softmax_fill_large_negative,
        "your output matches a masked softmax without subtracting the row max (exp overflows at large "
        "scores)": (masked_softmax_no_max_subtraction, masked_softmax_no_max_subtraction_multiplied),
        "your output matches a softmax over the query axis instead of the key (last) axis":
            masked_softmax_wrong_axis,
    },
)

EXERCISES = (PADDING_MASK, CAUSAL_MASK, MASKED_SOFTMAX)
