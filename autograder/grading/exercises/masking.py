"""Checks of chapter 2 (``masking.py``): ``padding_mask``, ``causal_mask``, ``masked_softmax``."""
from __future__ import annotations

import numpy as np

from solutions.masking import causal_mask as reference_causal_mask
from solutions.masking import masked_softmax as reference_masked_softmax

from ...spec import Exercise
from . import cases
from .cases import call_case, randn

# --- padding_mask ------------------------------------------------------------------------------


def padding_cases(rng):
    def case(name, valid_lens, num_keys, sizes, rung=0, **features):
        features = {"lengths": "(B,) lengths", "range": "lengths between 1 and Lk - 1", "dtype": "int64 lengths",
                    "keys": "several keys", **features}
        return call_case(name, "padding_mask", [valid_lens, num_keys], sizes=sizes, properties=("inputs_unchanged",),
                         rung=rung, features=features)

    B, Lq, Lk = int(rng.integers(3, 6)), int(rng.integers(2, 5)), int(rng.integers(5, 10))
    ends = rng.permutation(np.r_[0, Lk, rng.integers(1, Lk, B - 2)])  # an empty sequence and a full one
    per_query = rng.integers(1, Lk, (2, Lq))
    per_query_ends = rng.integers(0, Lk + 1, (2, Lq))
    per_query_ends[0, 0], per_query_ends[1, 1] = 0, Lk  # an empty row and a full one
    single = rng.integers(0, 2, B + 2)
    single[:2] = 0, 1
    ends_range = "a length 0 and a length Lk"
    return [
        case("(B,) lengths between 1 and Lk - 1", rng.integers(1, Lk, B), Lk, dict(B=B, Lk=Lk)),
        case("(B,) lengths, one of them 0 and one Lk", ends, Lk, dict(B=B, Lk=Lk), range=ends_range),
        case("(B,) lengths in int32", rng.integers(1, Lk, B).astype(np.int32), Lk, dict(B=B, Lk=Lk),
             dtype="int32 lengths"),
        case("(B,) lengths, a single key", single, 1, dict(B=B + 2), rung=1, range=ends_range,
             keys="a single key (num_keys = 1)"),
        case("(B, Lq) lengths between 1 and Lk - 1", per_query, Lk, dict(B=2, Lq=Lq, Lk=Lk), rung=2,
             lengths="(B, Lq) lengths"),
        case("(B, Lq) lengths, one of them 0 and one Lk", per_query_ends, Lk, dict(B=2, Lq=Lq, Lk=Lk), rung=2,
             lengths="(B, Lq) lengths", range=ends_range),
    ]


def _padding(valid_lens, num_keys, below=np.less, query_axis=True):
    valid_lens = np.asarray(valid_lens)
    mask = below(np.arange(num_keys), valid_lens[..., None])  # (B, Lk) or (B, Lq, Lk)
    return mask[:, None, :] if query_axis and valid_lens.ndim == 1 else mask


# Published: True at the padding (the opposite polarity) in wenet-e2e/wenet's make_pad_mask
# (and ESPnet's); a (B, Lk) mask without the query axis in rwth-i6/i6_experiments
# (lengths_to_padding_mask) and anhaidgroup/deepmatcher (sequence_mask).
def padding_mask_less_equal(valid_lens, num_keys):
    return _padding(valid_lens, num_keys, below=np.less_equal)


def padding_mask_one_short(valid_lens, num_keys):
    return _padding(np.asarray(valid_lens) - 1, num_keys)


def padding_mask_inverted(valid_lens, num_keys):
    return ~_padding(valid_lens, num_keys)


def padding_mask_no_query_axis(valid_lens, num_keys):
    return _padding(valid_lens, num_keys, query_axis=False)


def padding_mask_query_axis_always(valid_lens, num_keys):
    return _padding(valid_lens, num_keys, query_axis=False)[:, None]


def padding_mask_longest_length(valid_lens, num_keys):
    valid_lens = np.asarray(valid_lens)
    return _padding(valid_lens, int(valid_lens.max(initial=0)))  # num_keys unused


PADDING_MASK = Exercise(
    id="padding_mask",
    cases=padding_cases,
    ladder=(("(B,) lengths", ""), ("a single key (num_keys = 1)", ""),
            ("(B, Lq) lengths", "one length per query gives (B, Lq, Lk), without an extra axis")),
    hints={"(B, Lq) lengths": "one length per query gives (B, Lq, Lk), without an extra axis",
           "a length 0 and a length Lk": "a length 0 hides every key and a length Lk none",
           "a single key (num_keys = 1)": "the mask is (B, 1, 1) then: key 0 is valid where the length is 1",
           "int32 lengths": "any integer dtype of lengths gives the same boolean mask"},
    bugs={
        "your mask matches `key <= valid_len`: the valid keys are 0 .. valid_len - 1, so use `<`":
            padding_mask_less_equal,
        "your mask is off by one: it hides the last valid key (key < valid_len - 1); the valid keys are "
        "0 .. valid_len - 1, so use `key < valid_len`": padding_mask_one_short,
        "your mask is inverted: True must mean 'may attend' (a valid key), not 'padding'": padding_mask_inverted,
        "your mask has shape (B, Lk) for (B,) lengths: add the query axis, (B, 1, Lk), so it broadcasts "
        "over the queries": padding_mask_no_query_axis,
        "your mask adds a query axis to (B, Lq) lengths too: those already give (B, Lq, Lk)":
            padding_mask_query_axis_always,
        # shinewide/sba_speech's get_mask_from_lengths (and many TTS repositories): arange(max(lengths)).
        "your mask matches the reference's with num_keys = max(valid_lens): its key axis is as long as the "
        "longest length, not num_keys (Lk is given: a padded batch can be longer than its longest sequence)":
            padding_mask_longest_length,
    },
)


# --- causal_mask -------------------------------------------------------------------------------

def causal_cases(rng):
    def case(name, *args, rung=0, lengths):
        sizes = dict(Lq=args[0], Lk=args[-1]) if args[0] != args[-1] else dict(L=args[0])
        features = {"lengths": lengths, "num_keys": "num_keys defaulted" if len(args) == 1 else "num_keys given"}
        return call_case(name, "causal_mask", [int(a) for a in args], sizes=sizes, rung=rung, features=features)

    L, small = rng.choice(np.arange(4, 12), 2, replace=False)
    Lq = int(rng.integers(2, 6))
    return [
        case("square (L, L), num_keys defaulted", L, lengths="Lq = Lk"),
        case("square (L, L), num_keys given", small, small, lengths="Lq = Lk"),
        case("Lq < Lk", Lq, Lq + int(rng.integers(2, 7)), rung=1, lengths="Lq < Lk"),
        case("one query against Lk keys", 1, int(rng.integers(3, 12)), rung=1, lengths="one query, Lq < Lk"),
        case("Lq > Lk", Lq + int(rng.integers(2, 5)), Lq, rung=1, lengths="Lq > Lk"),
    ]


def _causal(num_queries, num_keys=None, shift=0, relation=np.less_equal):
    num_keys = num_queries if num_keys is None else num_keys
    rows = np.arange(num_queries)[:, None] + (num_keys - num_queries) + shift  # (Lq, 1)
    return relation(np.arange(num_keys)[None, :], rows)  # (Lq, Lk)


# Published: start-aligned masks cut from a square tril, karpathy/nanoGPT (bias[:, :, :T, :T])
# and rasbt/LLMs-from-scratch (mask[:num_tokens, :num_tokens]); the latter's mask is
# triu(ones, diagonal=1), True at the future: the opposite polarity.
def causal_mask_strict(num_queries, num_keys=None):
    return _causal(num_queries, num_keys, relation=np.less)


def causal_mask_one_ahead(num_queries, num_keys=None):
    return _causal(num_queries, num_keys, shift=1)


def causal_mask_transposed(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    return reference_causal_mask(num_keys, num_queries).T


def causal_mask_triu(num_queries, num_keys=None):
    # The same mistake written as np.triu: keys j >= i, start-aligned (differs from the
    # transpose above when Lq != Lk).
    num_keys = num_queries if num_keys is None else num_keys
    return np.triu(np.ones((num_queries, num_keys), dtype=bool))


def causal_mask_start_aligned(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    return np.arange(num_keys)[None, :] <= np.arange(num_queries)[:, None]  # np.tri(Lq, Lk)


def causal_mask_inverted(num_queries, num_keys=None):
    return ~_causal(num_queries, num_keys)


def causal_mask_offset_flipped(num_queries, num_keys=None):
    num_keys = num_queries if num_keys is None else num_keys
    rows = np.arange(num_queries)[:, None] + (num_queries - num_keys)  # the offset's sign reversed
    return np.arange(num_keys)[None, :] <= rows


CAUSAL_MASK = Exercise(
    id="causal_mask",
    cases=causal_cases,
    ladder=(("square masks (Lq = Lk)", ""),
            ("Lq != Lk", "the queries are the last Lq of the Lk positions, so query i sees keys j <= i + (Lk - Lq)")),
    hints={"lengths": "the queries are the last Lq of the Lk positions, so query i sees keys j <= i + (Lk - Lq)",
           "num_keys given": "num_keys defaults to num_queries"},
    bugs={
        "your mask is off by one: it hides the diagonal (j < i); a query may see its own key (j <= i)":
            causal_mask_strict,
        "your mask is off by one: it lets each query see the next key (j <= i + 1)": causal_mask_one_ahead,
        "your mask is transposed: query i must see keys j <= i, not keys j >= i":
            (causal_mask_transposed, causal_mask_triu),
        "your mask is aligned to the start of the keys (j <= i): for Lq != Lk the queries are the last "
        "Lq positions, so query i sees j <= i + (Lk - Lq)": causal_mask_start_aligned,
        "your mask is inverted: True must mean 'may attend' (the past), not 'the future'": causal_mask_inverted,
        "your mask shifts the diagonal by Lq - Lk, the wrong sign: query i sees keys j <= i + (Lk - Lq)":
            causal_mask_offset_flipped,
    },
)


# --- masked_softmax ----------------------------------------------------------------------------

def masked_softmax_cases(rng):
    B, H, Lq, Lk, L = 2, 3, 4, 5, 6
    sizes, square = dict(B=B, H=H, Lq=Lq, Lk=Lk), dict(L=L)

    def case(name, x, m, dtype, rung, sizes=sizes, **features):
        features = {"rank": "2-D (L, L) scores" if np.ndim(x) == 2 else "4-D (B, H, Lq, Lk) scores",
                    "dtype": dtype, "mask": "a mask of the scores' shape", "rows": "no fully masked row",
                    "scale": "scores of a few units", **features}
        return call_case(name, "masked_softmax", [x, m], sizes=sizes, dtype=dtype, rung=rung,
                         properties=("rows_sum_to_one", "masked_exactly_zero", "inputs_unchanged"), features=features)

    def scores(dtype, shape=(B, H, Lq, Lk), scale=2.0):
        return randn(rng, shape, dtype, scale)

    def keeps(shape, p, empty=()):
        mask = rng.random(shape) < p
        mask[..., int(rng.integers(shape[-1]))] = True  # every row keeps a key...
        for row in empty:  # ...but these
            mask[row] = False
        return mask

    padding = (np.arange(Lk) < rng.integers(1, Lk, B)[:, None])[:, None, None, :]  # (B, 1, 1, Lk)
    empty_rows = keeps((B, H, Lq, Lk), 0.5, [(0, 0, 1), (1, 2, 3), (1, 1, 0)])

    def extreme(spread, dtype):
        # Rows at +spread, -spread or 0, and masked scores at 3 * spread, far above the others:
        # they must not take the weight, nor overflow. float32 uses spread 100 (exp overflows
        # beyond 88.7), where a log-sum-exp softmax stays exact to ulp(100) = 7.6e-6.
        x = spread * rng.integers(-1, 2, (B, H, Lq, 1)) + 3 * rng.standard_normal((B, H, Lq, Lk))
        x[..., 1] = np.where(extreme_mask[..., 1], x[..., 1], 3 * spread)
        return x.astype(dtype)

    extreme_mask = keeps((B, H, Lq, Lk), 0.6)
    large = "scores of ±1e4 (±100 in float32), masked ones 3 times larger"
    return [
        case("2-D (L, L) scores and mask, float64", scores("float64", (L, L)), keeps((L, L), 0.6), "float64", 0,
             square),
        case("2-D (L, L), a fully masked row", scores("float64", (L, L)), keeps((L, L), 0.6, [2]), "float64", 0,
             square, rows="a fully masked row"),
        case("2-D (L, L), mask None", scores("float64", (L, L)), None, "float64", 0, square, mask="mask None"),
        case("2-D (L, L), float32", scores("float32", (L, L)), keeps((L, L), 0.6), "float32", 0, square),
        case("(B, H, Lq, Lk) scores and mask, float64", scores("float64"), keeps((B, H, Lq, Lk), 0.6), "float64", 1),
        case("float64, padding mask (B, 1, 1, Lk)", scores("float64"), padding, "float64", 1,
             mask="a padding mask (B, 1, 1, Lk) that broadcasts"),
        case("float64, (B, H, Lq, Lk) with fully masked rows", scores("float64"), empty_rows, "float64", 1,
             rows="a fully masked row"),
        case("float64, causal mask (Lq, Lk)", scores("float64"), cases.causal(Lq, Lk), "float64", 1,
             mask="a causal mask (Lq, Lk) that broadcasts"),
        case("scores of ±1e4, masked ones at 3e4, float64", extreme(1e4, "float64"), extreme_mask, "float64", 2,
             scale=large),
        case("scores of ±100, masked ones at 300, float32", extreme(100, "float32"), extreme_mask, "float32", 2,
             scale=large),
    ]


def _exp_normalise(scores, keep=None):
    """exp(scores - row max) / row sum over the last axis, optionally zeroing entries first."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        e = e if keep is None else e * keep
        return e / e.sum(axis=-1, keepdims=True)


def _full(mask, scores):
    return np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)


# Published: masked scores filled with -1e6 (fully masked rows uniform) in d2l-ai/d2l-en
# (masked_softmax); -inf from triu with no guard (NaN rows) in niujiazhen/happy-llm
# (maskSelfAttention.py); scores multiplied by the mask in allenai/allennlp (masked_softmax).
def masked_softmax_inverted(scores, mask):
    return reference_masked_softmax(scores, ~_full(mask, scores))


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


def masked_softmax_no_max_subtraction_multiplied_guarded(scores, mask):
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(scores) * _full(mask, scores)  # a masked overflow is still inf * 0 = NaN
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total == 0, 1, total)


def masked_softmax_multiplied_then_renormalised(scores, mask):
    # Published as allennlp.nn.util.masked_softmax (memory_efficient=False): softmax(x * mask),
    # then * mask and renormalised; a masked score becomes 0, which takes the max of a row of
    # very negative scores, so the real weights underflow to 0.
    keep = _full(mask, scores)
    with np.errstate(invalid="ignore", over="ignore"):
        e = _exp_normalise((scores * keep).astype(scores.dtype)) * keep
        return (e / (e.sum(axis=-1, keepdims=True) + 1e-13)).astype(scores.dtype)


def masked_softmax_wrong_axis(scores, mask):
    flip = lambda x: np.swapaxes(x, -1, -2)  # noqa: E731
    return flip(reference_masked_softmax(flip(scores), flip(_full(mask, scores))))


MASKED_SOFTMAX = Exercise(
    id="masked_softmax",
    cases=masked_softmax_cases,
    ladder=(("2-D (L, L) scores with a mask of the same shape", ""),
            ("4-D scores (B, H, Lq, Lk) with masks that broadcast", "the mask broadcasts against the scores; "
             "normalise over the last axis only"),
            ("scores of ±1e4 (±100 in float32)", "subtract each row's max over its unmasked keys before exp")),
    hints={"4-D (B, H, Lq, Lk) scores": "normalise over the last axis only, whatever the leading axes",
           "a padding mask (B, 1, 1, Lk) that broadcasts": "the mask broadcasts against the scores",
           "a causal mask (Lq, Lk) that broadcasts": "the mask broadcasts against the scores",
           "a fully masked row": "a fully masked row is all zeros: never NaN, never a uniform average",
           "mask None": "mask None means no mask",
           "float32": "keep the input's dtype",
           "scale": "subtract each row's max over its unmasked keys before exp"},
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
        "scores)": (masked_softmax_no_max_subtraction, masked_softmax_no_max_subtraction_multiplied,
                     masked_softmax_no_max_subtraction_multiplied_guarded),
        "your output matches a softmax over the query axis instead of the key (last) axis":
            masked_softmax_wrong_axis,
        "your output matches the scores multiplied by the mask before the softmax, then renormalised: a "
        "masked score becomes 0, not -inf, so in a row of very negative scores it takes the max and the "
        "real weights underflow to 0 (fill masked scores with -inf or the dtype's min instead)":
            masked_softmax_multiplied_then_renormalised,
    },
)

EXERCISES = (PADDING_MASK, CAUSAL_MASK, MASKED_SOFTMAX)
