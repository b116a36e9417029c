"""Checks of chapter 8's ``induction_score`` (``language_model.py``, PyTorch). The chapter's
other checks: ``positions.py``, ``generation.py``."""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ...spec import Exercise
from .cases import TOLERANCE, call_case, intervention, raises_case

def _causal_weights(rng, shape, sharp=False, dtype="float64"):
    """Random attention weights ``(..., L, L)``: rows sum to one over the keys j <= i."""
    length = shape[-1]
    scores = rng.standard_normal(shape) * (3.0 if sharp else 1.0)
    scores = np.where(np.tril(np.ones((length, length), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)).astype(dtype)


INDUCTION_AXES = {2: "no leading axis: (L, L)", 3: "one leading axis: (H, L, L)",
                  4: "two leading axes: (B, H, L, L)"}


def induction_cases(rng):
    def case(name, shape, period, dtype="float64", rung=1, labels=None):
        sizes = dict(zip(labels or ("B", "H", "L", "L (keys)")[-len(shape):], map(int, shape)))
        length = shape[-1]
        # Periods 1, 2 and L - 1 each make a mistake right by chance (key i, key i - 1 the previous
        # token, a single query): each its own value, so no pair lumps one with the others.
        named = {1: "period 1", 2: "period 2", length - 1: "period L - 1", length / 2: "period L / 2 (one repeat)"}
        features = {"leading axes": INDUCTION_AXES[len(shape)], "dtype": dtype,
                    "period": named.get(period, "another period (3 to L - 2, not L / 2)")}
        weights = _causal_weights(rng, shape, dtype=dtype)
        main = call_case(name, "induction_score", [weights, int(period)], sizes=sizes, dtype=dtype,
                         properties=("inputs_unchanged",), as_tensors=True, rung=rung, features=features)
        # Its interventions: the same weights with one argument changed toward the simplest case.
        out = [main]
        if features["period"] != "another period (3 to L - 2, not L / 2)" and length > 6 and length / 2 != 3:
            out.append(intervention(main, "period", "another period (3 to L - 2, not L / 2)",
                                    args=[weights, 3]))
        if dtype == "float32":
            out.append(dataclasses.replace(intervention(main, "dtype", "float64", args=[weights.astype("float64"),
                                                                                       int(period)]),
                                           **TOLERANCE["float64"]))
        if len(shape) < 4:
            four = (1,) * (4 - len(shape)) + tuple(shape)
            out.append(intervention(main, "leading axes", INDUCTION_AXES[4], args=[weights.reshape(four), int(period)],
                                    sizes=dict(zip(("B", "H", "L", "L (keys)"), map(int, four)))))
        return out

    B, H = int(rng.integers(2, 4)), int(rng.integers(3, 6))
    L = int(rng.integers(14, 20))
    return [
        *case("(L, L), period L / 2", (2 * (L // 2), 2 * (L // 2)), L // 2, rung=0, labels=("L", "L (keys)")),
        *case("(B, H, L, L), period L / 2", (B, H, 2 * (L // 2), 2 * (L // 2)), L // 2, rung=0),
        *case("(B, H, L, L), float32", (B, H, L, L), int(rng.integers(4, L - 2)), dtype="float32"),
        *case("(B, H, L, L), period 3", (B, H, L, L), 3),
        *case("(H, L, L), period 3", (H, L, L), 3, labels=("H", "L", "L (keys)")),
        *case("(B, H, L, L), period 1", (B, H, L, L), 1),
        *case("(B, H, L, L), period L - 1", (B, H, L, L), L - 1),
        *case("(B, H, L, L), period 2", (B, H, L + 3, L + 3), 2),
        raises_case("(B, H, L, L), period L", "induction_score", [_causal_weights(rng, (B, H, L, L)), L],
                    sizes={"B": B, "H": H, "L": L, "L (keys)": L}, rung=2, as_tensors=True,
                    features={"leading axes": INDUCTION_AXES[4], "dtype": "float64", "period": "period L"}),
        raises_case("(B, H, L, L), period 0", "induction_score", [_causal_weights(rng, (B, H, L, L)), 0],
                    sizes={"B": B, "H": H, "L": L, "L (keys)": L}, rung=2, as_tensors=True,
                    features={"leading axes": INDUCTION_AXES[4], "dtype": "float64", "period": "period 0"}),
    ]


def _induction(weights, period, *, key_shift=1, first_query=None, reduce="mean"):
    """The reference with one step changed; each bug below sets one knob."""
    length = weights.shape[-1]
    _in_range(period, length)
    start = period if first_query is None else first_query(period)
    queries = torch.arange(start, length)
    values = weights[..., queries, queries - period + key_shift]  # negative keys wrap, as in learners' code
    return values.mean(dim=-1) if reduce == "mean" else values.sum(dim=-1)


def _induction_bug(name, **knobs):
    def bug(weights, period):
        return _induction(weights, period, **knobs)

    bug.__name__ = bug.__qualname__ = name
    return bug


def _in_range(period, length):
    # The bugs refuse a period outside 1 <= period < L as the reference does: each differs from
    # it in its one mistake only, so that none shows on the cases that must raise.
    if not 1 <= period < length:
        raise ValueError(f"period must be at least 1 and less than {length}, got {period}")


def induction_on_diagonal_with_one_extra_query(weights, period):
    # torch.diagonal(w, offset=-(period - 1)) starts at query period - 1, which has no earlier copy.
    _in_range(period, weights.shape[-1])
    return torch.diagonal(weights, offset=-(period - 1), dim1=-2, dim2=-1).mean(dim=-1)


def induction_previous_token(weights, period):
    length = weights.shape[-1]
    _in_range(period, length)
    queries = torch.arange(period, length)
    return weights[..., queries, queries - 1].mean(dim=-1)


def induction_transposed(weights, period):
    # weights[..., key, query]: the reference on the transposed weights (equal at period 1, the diagonal).
    return _induction(weights.transpose(-2, -1), period)


INDUCTION_SCORE = Exercise(
    id="induction_score",
    cases=induction_cases,
    ladder=(("a sequence repeated once (period L / 2)", ""),
            ("other periods, float32", "the queries i = period ... L - 1, each at key i - period + 1, whatever "
             "the period"),
            ("a period outside 1 to L - 1", "raise ValueError unless 1 <= period < L")),
    hints={"period L": "raise ValueError unless 1 <= period < L",
           "leading axes": "accept any leading axes: the last two are (queries, keys)",
           "float32": "keep the input's dtype",
           "period": "the queries i = period ... L - 1, each at key i - period + 1, whatever the period"},
    bugs={
        "your score reads key i - period, the earlier copy of the current token (a duplicate-token head): "
        "an induction head attends to the token after it, key i - period + 1":
            _induction_bug("earlier_copy", key_shift=0),
        "your score reads key i - 1, the previous token (a previous-token head): an induction head attends "
        "to key i - period + 1": induction_previous_token,
        "your score includes query period - 1, which has no earlier copy (torch.diagonal with "
        "offset=-(period - 1) starts there): average over the queries i = period ... L - 1":
            (_induction_bug("from_period_minus_one", first_query=lambda p: p - 1),
             induction_on_diagonal_with_one_extra_query),
        "your score averages over every query, those of the first copy too: only the queries i >= period "
        "have an earlier copy": _induction_bug("all_queries", first_query=lambda p: 0),
        "your score is a sum over the queries: average it (a score in [0, 1])": _induction_bug("sum", reduce="sum"),
        "your score matches the reference's on the transposed weights, as if it read weights[..., key, query]: "
        "the queries are the rows (axis -2) and the keys the columns (axis -1), so read weights[..., i, "
        "i - period + 1] (at period 1 both read the diagonal)": induction_transposed,
    },
)


EXERCISES = (INDUCTION_SCORE,)
