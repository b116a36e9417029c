"""Checks of chapter 3 (``heads.py``): ``split_heads`` and ``merge_heads``."""
from __future__ import annotations

import numpy as np

from ...spec import Exercise
from .cases import call_case, randn

# --- split_heads -------------------------------------------------------------------------------


def split_cases(rng):
    def case(name, B, L, H, d, dtype="float64", rung=1):
        return call_case(name, "split_heads", [randn(rng, (B, L, H * d), dtype), H], dtype=dtype, rung=rung,
                         sizes={"B": B, "L": L, "H": H, "d": d, "H*d": H * d}, properties=("inputs_unchanged",))

    return [
        case("one head, float64", 2, 4, 1, 3, rung=0),
        case("one head, float32", 3, 2, 1, 5, "float32", rung=0),
        case("float64, (B, L, H*d) = (2, 3, 4*5)", 2, 3, 4, 5),
        case("float32, 2 heads of 6", 3, 5, 2, 6, "float32"),
        case("head size 1", 2, 3, 5, 1),
        case("more heads than positions", 1, 2, 6, 4),
    ]


def split_heads_no_head_axis_move(x, num_heads):
    # Published: view(B, L, H, d) with no transpose in the xformers variant of CLIP's _shape
    # (A1ex-Chen/DL_project_log, .../otter/xformers_model/clip__shape.py).
    B, L, F = x.shape
    return x.reshape(B, L, num_heads, F // num_heads)


def split_heads_no_transpose(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, num_heads, L, F // num_heads)


def split_heads_strided(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, L, F // num_heads, num_heads).transpose(0, 3, 1, 2)  # head h holds features h::H


def split_heads_last_axes_swapped(x, num_heads):
    B, L, F = x.shape
    return x.reshape(B, L, num_heads, F // num_heads).transpose(0, 2, 3, 1)  # (B, H, d, L)


SPLIT_HEADS = Exercise(
    id="split_heads",
    cases=split_cases,
    ladder=(("one head", ""), ("several heads", "head h holds features h*d:(h+1)*d, and the head axis comes "
                                                "before the sequence axis: (B, H, L, d)")),
    bugs={
        "your output matches a reshape to (B, H, L, d) without the transpose: reshape to (B, L, H, d), "
        "then swap the L and H axes": split_heads_no_transpose,
        "your output takes the heads from the wrong axis: head h must hold the contiguous features "
        "h*d:(h+1)*d, not every H-th feature": split_heads_strided,
        "your output is (B, H, d, L): the transpose moved the wrong axes": split_heads_last_axes_swapped,
        "your output is (B, L, H, d): the head axis must come before the sequence axis, (B, H, L, d) "
        "(swap axes 1 and 2 after the reshape)": split_heads_no_head_axis_move,
    },
)


# --- merge_heads -------------------------------------------------------------------------------

def merge_cases(rng):
    def case(name, B, H, L, d, dtype="float64", rung=1):
        return call_case(name, "merge_heads", [randn(rng, (B, H, L, d), dtype)], dtype=dtype, rung=rung,
                         sizes={"B": B, "H": H, "L": L, "d": d, "H*d": H * d}, properties=("inputs_unchanged",))

    return [
        case("one head, float64", 2, 1, 4, 3, rung=0),
        case("one head, float32", 3, 1, 2, 5, "float32", rung=0),
        case("float64, (B, H, L, d) = (2, 4, 3, 5)", 2, 4, 3, 5),
        case("float32, 2 heads of 6", 3, 2, 5, 6, "float32"),
        case("head size 1", 2, 5, 3, 1),
        case("more heads than positions", 1, 6, 2, 4),
    ]


def merge_heads_no_transpose(x):
    B, H, L, d = x.shape
    return x.reshape(B, L, H * d)


def merge_heads_interleaved(x):
    B, H, L, d = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, L, H * d)  # (B, L, d, H): features interleaved


def merge_heads_summed(x):
    return x.sum(axis=1)


MERGE_HEADS = Exercise(
    id="merge_heads",
    cases=merge_cases,
    ladder=(("one head", ""), ("several heads", "move the head axis after the sequence axis, (B, L, H, d), "
                                                "then reshape: head h fills features h*d:(h+1)*d")),
    bugs={
        "your output matches a reshape to (B, L, H*d) without the transpose: swap the H and L axes "
        "first, (B, L, H, d), then reshape": merge_heads_no_transpose,
        "your output interleaves the heads' features: transpose to (B, L, H, d), not (B, L, d, H), "
        "so head h fills features h*d:(h+1)*d": merge_heads_interleaved,
        "your output sums the heads instead of concatenating them": merge_heads_summed,
    },
)

EXERCISES = (SPLIT_HEADS, MERGE_HEADS)
