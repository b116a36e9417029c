"""Checks of chapter 5 (``analysis.py``): ``attention_entropy``."""
from __future__ import annotations

import numpy as np

from solutions.masking import masked_softmax

from ...spec import Exercise
from .cases import call_case, randn

# A common guard, log(w + eps) with eps <= 1e-10, moves a float64 entropy by up to Lk * eps:
# looser than the float64 default so that it passes, far tighter than any real bug.
GUARDED_LOG = {"rtol": 1e-8, "atol": 1e-9}


def entropy_cases(rng):
    B, H, Lq, Lk = 2, 3, 4, 5
    sizes = dict(B=B, H=H, Lq=Lq, Lk=Lk)

    def weights(dtype, mask=None, scale=2.0, shape=(B, H, Lq, Lk)):
        return masked_softmax(randn(rng, shape, dtype, scale), mask)

    def case(name, w, dtype, sizes=sizes, rung=1, rows="softmax rows"):
        tolerance = GUARDED_LOG if dtype == "float64" else {}
        features = {"rank": f"{np.ndim(w)}-D weights", "dtype": dtype, "rows": rows,
                    "zeros": "zero weights (0 log 0 = 0)" if (np.asarray(w) == 0).any() else "no zero weight"}
        return call_case(name, "attention_entropy", [w], dtype=dtype, sizes=sizes, properties=("inputs_unchanged",),
                         rung=rung, features=features, **tolerance)

    masked = rng.random((B, H, Lq, Lk)) < 0.6
    masked[..., 0] = True
    masked[0, 1, 2] = masked[1, 0, 3] = False  # fully masked rows: all-zero weights, entropy 0
    one_hot = np.eye(Lk)[rng.integers(0, Lk, (B, Lq))]  # (B, Lq, Lk)
    n = int(rng.integers(6, 40))  # the uniform rows' length
    return [
        case("2-D weights (Lq, Lk)", weights("float64", shape=(Lq, Lk)), "float64", dict(Lq=Lq, Lk=Lk), rung=0),
        case("2-D weights with zeros", weights("float64", masked[0, 0], shape=(Lq, Lk)), "float64",
             dict(Lq=Lq, Lk=Lk), rung=0),
        case("float64 softmax weights", weights("float64"), "float64"),
        case("float32 stays float32", weights("float32"), "float32"),
        case("zeros at masked keys and fully masked rows (0 log 0 = 0)", weights("float64", masked), "float64"),
        case("float32 with zeros", weights("float32", masked), "float32"),
        case("one-hot rows have entropy 0", one_hot, "float64", dict(B=B, Lq=Lq, Lk=Lk), rows="one-hot rows"),
        case("uniform rows (entropy log(Lk))", np.full((3, Lq, n), 1 / n), "float64", dict(B=3, Lq=Lq, Lk=n),
             rows="uniform rows"),
    ]


def _entropy(weights, log=np.log, axis=-1):
    w = np.asarray(weights)
    return -(w * log(np.where(w > 0, w, 1))).sum(axis=axis)


# Published: -sum(p log p) with no guard for p = 0 (NaN) is the pitfall HF's bertology example
# guards against explicitly (huggingface/transformers run_bertology.py: plogp[p == 0] = 0), and
# afiq-aswadi/kata-sr's entropy exercise asks for log(p + eps) (a guard GUARDED_LOG accepts);
# a log in another base (here: divided by log of the head count) in attention-analysis snippets.
def entropy_in_bits(weights):
    return _entropy(weights, log=np.log2)


def entropy_nan_on_zeros(weights):
    with np.errstate(divide="ignore", invalid="ignore"):
        return -(weights * np.log(weights)).sum(axis=-1)


def entropy_over_queries(weights):
    return _entropy(weights, axis=-2)


def entropy_sign_flipped(weights):
    return -_entropy(weights)


ATTENTION_ENTROPY = Exercise(
    id="attention_entropy",
    cases=entropy_cases,
    ladder=(("2-D weights (Lq, Lk)", ""), ("weights with batch and head axes", "sum over the last axis only")),
    hints={"4-D weights": "sum over the last axis only, whatever the leading axes",
           "zero weights (0 log 0 = 0)": "take 0 log 0 = 0 (e.g. log of np.where(w > 0, w, 1))",
           "float32": "keep the input's dtype"},
    bugs={
        "your output is in bits (log2): the entropy is asked in nats (natural log)": entropy_in_bits,
        "your output is NaN where a weight is 0: the term there must be 0 (0 log 0 = 0), e.g. with the log of "
        "np.where(w > 0, w, 1); 0 * log(0) = 0 * -inf is NaN, and so is a log left unwritten there "
        "(np.log(w, where=w > 0) without out= leaves whatever the memory held)": entropy_nan_on_zeros,
        "your output sums over the query axis: the entropy of each query's row sums over the keys "
        "(the last axis)": entropy_over_queries,
        "your output has the wrong sign: H = -sum w log w is never negative": entropy_sign_flipped,
    },
)

EXERCISES = (ATTENTION_ENTROPY,)
