"""Checks of chapter 3 (``heads.py``): ``split_heads`` and ``merge_heads``."""
from __future__ import annotations

import numpy as np

from ...spec import Exercise
from .cases import call_case, raises_case, randn

# --- split_heads -------------------------------------------------------------------------------


def _features(heads, lead, dtype, sizes="d > 1, H < L"):
    return {"heads": heads, "leading axes": lead, "dtype": dtype, "sizes": sizes, "divides": "H divides H*d"}


ONE_LEAD, TWO_LEADS, NO_LEAD = "one leading axis (B, ...)", "two leading axes (B, C, ...)", "no leading axis"


def split_cases(rng):
    def case(name, lead, L, H, d, dtype="float64", rung=1, sizes_="d > 1, H < L"):
        shape = tuple(lead) + (L, H * d)
        axes = dict(zip(("B", "C"), lead))
        features = _features("one head" if H == 1 else "several heads",
                             {1: ONE_LEAD, 2: TWO_LEADS, 0: NO_LEAD}[len(lead)], dtype, sizes_)
        return call_case(name, "split_heads", [randn(rng, shape, dtype), H], dtype=dtype, rung=rung,
                         sizes={**axes, "L": L, "H": H, "d": d, "H*d": H * d}, properties=("inputs_unchanged",),
                         features=features)

    B, H = int(rng.integers(2, 4)), int(rng.integers(2, 5))
    d = int(rng.integers(2, 6))
    return [
        case("one head, float64", (2,), 4, 1, 3, rung=0),
        case("one head, float32", (3,), 2, 1, 5, "float32", rung=0),
        case("float64, (B, L, H*d) = (2, 5, 4*5)", (2,), 5, 4, 5),
        case("float32, 2 heads of 6", (3,), 5, 2, 6, "float32"),
        case("head size 1", (2,), 3, 5, 1, sizes_="d = 1"),
        case("more heads than positions", (1,), 2, 6, 4, sizes_="H > L"),
        case("two leading axes (B, C, L, H*d)", (B, 3), 5, H, d),
        case("no leading axis: (L, H*d)", (), 5, H, d),
        raises_case("last axis not divisible by num_heads", "split_heads", [randn(rng, (B, 5, H * d + 1)), H],
                    sizes={"B": B, "L": 5, "H": H}, rung=1,
                    features={**_features("several heads", ONE_LEAD, "float64"),
                              "divides": "H does not divide the last axis"}),
    ]


# The bugs work on any leading axes, as the contract asks: each differs from the reference in
# its one mistake only, so that its diagnosis is true of the cases it shows on.
def split_heads_no_head_axis_move(x, num_heads):
    # Published: view(B, L, H, d) with no transpose in the xformers variant of CLIP's _shape
    # (A1ex-Chen/DL_project_log, .../otter/xformers_model/clip__shape.py).
    *lead, L, F = x.shape
    return x.reshape(*lead, L, num_heads, F // num_heads)


def split_heads_no_transpose(x, num_heads):
    *lead, L, F = x.shape
    return x.reshape(*lead, num_heads, L, F // num_heads)


def split_heads_strided(x, num_heads):
    *lead, L, F = x.shape
    return np.moveaxis(x.reshape(*lead, L, F // num_heads, num_heads), -1, -3)  # head h holds features h::H


def split_heads_last_axes_swapped(x, num_heads):
    *lead, L, F = x.shape
    return np.moveaxis(x.reshape(*lead, L, num_heads, F // num_heads), -3, -1)  # (B, H, d, L)


def split_heads_truncates(x, num_heads):
    # F // H without a check: a last axis that H does not divide loses features or fails
    # in the reshape, never with the ValueError the contract asks for.
    *lead, L, F = x.shape
    d = F // num_heads
    return np.swapaxes(x[..., : num_heads * d].reshape(*lead, L, num_heads, d), -2, -3)


SPLIT_HEADS = Exercise(
    id="split_heads",
    cases=split_cases,
    ladder=(("one head", ""), ("several heads", "head h holds features h*d:(h+1)*d, and the head axis comes "
                                                "before the sequence axis: (B, H, L, d)")),
    hints={"several heads": "head h holds features h*d:(h+1)*d, and the head axis comes before the sequence axis: "
                            "(B, H, L, d)",
           "float32": "keep the input's dtype",
           "two leading axes (B, C, ...)": "accept any number of leading axes: (..., L, H*d) -> (..., H, L, d)",
           "no leading axis": "accept any number of leading axes: (L, H*d) -> (H, L, d)",
           "H does not divide the last axis": "raise ValueError when num_heads does not divide the last axis"},
    bugs={
        "your output matches a reshape to (B, H, L, d) without the transpose: reshape to (B, L, H, d), "
        "then swap the L and H axes": split_heads_no_transpose,
        "your output takes the heads from the wrong axis: head h must hold the contiguous features "
        "h*d:(h+1)*d, not every H-th feature": split_heads_strided,
        "your output is (B, H, d, L): the transpose moved the wrong axes": split_heads_last_axes_swapped,
        "your output is (B, L, H, d): the head axis must come before the sequence axis, (B, H, L, d) "
        "(swap axes 1 and 2 after the reshape)": split_heads_no_head_axis_move,
        "your split does not refuse a last axis that num_heads does not divide: raise ValueError":
            split_heads_truncates,
    },
)


# --- merge_heads -------------------------------------------------------------------------------

def merge_cases(rng):
    def case(name, lead, H, L, d, dtype="float64", rung=1, sizes_="d > 1, H < L"):
        axes = dict(zip(("B", "C"), lead))
        features = _features("one head" if H == 1 else "several heads",
                             {1: ONE_LEAD, 2: TWO_LEADS, 0: NO_LEAD}[len(lead)], dtype, sizes_)
        return call_case(name, "merge_heads", [randn(rng, tuple(lead) + (H, L, d), dtype)], dtype=dtype, rung=rung,
                         sizes={**axes, "H": H, "L": L, "d": d, "H*d": H * d}, properties=("inputs_unchanged",),
                         features=features)

    B, H = int(rng.integers(2, 4)), int(rng.integers(2, 5))
    d = int(rng.integers(2, 6))
    return [
        case("one head, float64", (2,), 1, 4, 3, rung=0),
        case("one head, float32", (3,), 1, 2, 5, "float32", rung=0),
        case("float64, (B, H, L, d) = (2, 4, 5, 3)", (2,), 4, 5, 3),
        case("float32, 2 heads of 6", (3,), 2, 5, 6, "float32"),
        case("head size 1", (2,), 5, 3, 1, sizes_="d = 1"),
        case("more heads than positions", (1,), 6, 2, 4, sizes_="H > L"),
        case("two leading axes (B, C, H, L, d)", (B, 3), H, 5, d),
        case("no leading axis: (H, L, d)", (), H, 5, d),
    ]


def merge_heads_no_transpose(x):
    *lead, H, L, d = x.shape
    return x.reshape(*lead, L, H * d)


def merge_heads_interleaved(x):
    *lead, H, L, d = x.shape
    return np.moveaxis(x, -3, -1).reshape(*lead, L, H * d)  # (B, L, d, H): features interleaved


def merge_heads_summed(x):
    return x.sum(axis=-3)


def merge_heads_swapped_with_features(x):
    # swapaxes(-1, -3) puts the features where the heads were: (B, d, L, H), then reshaped.
    *lead, H, L, d = x.shape
    return np.swapaxes(x, -1, -3).reshape(*lead, L, H * d)



MERGE_HEADS = Exercise(
    id="merge_heads",
    cases=merge_cases,
    ladder=(("one head", ""), ("several heads", "move the head axis after the sequence axis, (B, L, H, d), "
                                                "then reshape: head h fills features h*d:(h+1)*d")),
    hints={"several heads": "move the head axis after the sequence axis, (B, L, H, d), then reshape: head h fills "
                            "features h*d:(h+1)*d",
           "float32": "keep the input's dtype",
           "two leading axes (B, C, ...)": "accept any number of leading axes: (..., H, L, d) -> (..., L, H*d)",
           "no leading axis": "accept any number of leading axes: (H, L, d) -> (L, H*d)"},
    bugs={
        "your output matches a reshape to (B, L, H*d) without the transpose: swap the H and L axes "
        "first, (B, L, H, d), then reshape": merge_heads_no_transpose,
        "your output interleaves the heads' features: transpose to (B, L, H, d), not (B, L, d, H), "
        "so head h fills features h*d:(h+1)*d": merge_heads_interleaved,
        "your output sums the heads instead of concatenating them": merge_heads_summed,
        "your output swaps the head axis with the feature axis (swapaxes(-1, -3)), which also moves the "
        "sequence: swap the head and sequence axes, swapaxes(-2, -3), then reshape":
            merge_heads_swapped_with_features,
    },
)

EXERCISES = (SPLIT_HEADS, MERGE_HEADS)
