"""A case's properties (rows summing to one, masked keys exactly zero, dropout in training, the
memory chunked attention holds, a layer's projections being nn.Linear) and :func:`check_case`:
the reasons a case fails, properties before value mismatches."""
from __future__ import annotations

import re

import numpy as np

from ..compare import array_index, compare_outputs, number
from ..said import slot, value  # a number of the learner's output on a hidden case: shown where cases are public
from ..spec import INFO, Case


def _probability_key(expected):
    return "weights" if "weights" in expected else "out"


def _label(key):
    return "the result" if key == "out" else key


def case_mask(case: Case, shape):
    """The case's own mask broadcast to ``shape`` (the weights'), or None when it has none.

    The mask is the ``mask`` input, or the called function's argument where its exercise
    declares it (``spec.ExerciseInfo.mask_position``); a layer's 3-D mask ``(B, Lq, Lk)`` is
    shared by the heads (a layer driver's, or ``ExerciseInfo.heads_share_mask``), so it gains
    the head axis first."""
    inputs = case.inputs
    called = INFO.get(inputs.get("function"))
    mask = inputs.get("kwargs", {}).get("mask", inputs.get("mask"))
    if mask is None and called is not None and called.mask_position is not None:
        mask = inputs["args"][called.mask_position]
    if mask is None:
        return None
    mask = np.asarray(mask).astype(bool)
    layer = case.driver.startswith("mha_") or (called is not None and called.heads_share_mask)
    if layer and mask.ndim == 3 and len(shape) == 4:
        mask = mask[:, None]
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        return None


def _rows_sum_to_one(case, got, expected):
    key = _probability_key(expected)
    g, e = got.get(key), expected.get(key)
    if not (isinstance(g, np.ndarray) and g.shape == e.shape and g.dtype.kind == "f"):
        return None
    axis = case.inputs.get("kwargs", {}).get("axis", -1)
    sums, want = g.astype(np.float64).sum(axis), e.astype(np.float64).sum(axis)
    bad = np.flatnonzero(~np.isclose(sums, want, rtol=0, atol=max(10 * case.rtol, 1e-6)))
    if not bad.size:
        return None
    at = array_index(bad[0], sums.shape)
    if want.flat[bad[0]] == 0:
        return (f"the fully masked row of {_label(key)} at index {at} sums to {value(number(sums.flat[bad[0]]))}, "
                f"expected all zeros")
    return f"the rows of {_label(key)} do not sum to one: the row at index {at} sums to {value(number(sums.flat[bad[0]]))}"


def _masked_exactly_zero(case, got, expected):
    key = _probability_key(expected)
    g = got.get(key)
    if not isinstance(g, np.ndarray) or g.shape != getattr(expected.get(key), "shape", None):
        return None
    mask = case_mask(case, g.shape)
    if mask is None:  # no mask in this case: nothing is masked
        return None
    bad = np.flatnonzero(~mask & (g != 0))
    if not bad.size:
        return None
    at = array_index(bad[0], g.shape)
    return f"{_label(key)} must be exactly 0 at masked keys: got {value(number(g.flat[bad[0]]))} at index {at}"


def _dropout_in_training(case, got, expected):
    train, evaluated = got.get("_out_train"), got.get("out")
    if isinstance(train, np.ndarray) and isinstance(evaluated, np.ndarray) and train.shape == evaluated.shape:
        if np.allclose(train, evaluated):
            return "in training mode the output equals the eval-mode output: dropout is not applied to the weights"
    return None


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


def _most_held(used):
    """``(bytes, what)``: the larger of a ``_memory`` report's two peaks (``drivers.memory``)."""
    peaks = [(n, what) for n, what in ((used.get("torch"), "torch tensors"),
                                       (used.get("traced"), "NumPy arrays and Python objects")) if type(n) is int]
    return max(peaks, key=lambda p: p[0], default=(None, ""))


def _never_holds_all_scores(case, got, expected):
    """What the call held at its peak (``call``'s ``peak_memory``) stays under half of one whole
    ``(..., Lq, Lk)`` score matrix of q and k, in q's dtype: chunked attention holds a chunk of
    scores at a time (the reference well under a quarter of it, a full matrix at least all of it)."""
    used = got.get("_memory")
    if not isinstance(used, dict):
        return None
    if used.get("stopped"):
        return (f"your call stopped {slot(used['stopped'], 80)}, with which the grader measures the memory the call "
                "allocates: leave it running")
    q, k = (np.asarray(a) for a in case.inputs["args"][:2])
    shape = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    whole = int(np.prod(shape)) * q.dtype.itemsize
    held, what = _most_held(used)
    if held is None or held < whole / 2:
        return None
    largest = used.get("torch_largest") if what == "torch tensors" else None
    ref = _most_held(expected.get("_memory") or {})[0]
    return (f"at its peak your call held {_mib(held)} of new {what} at once"
            + (f" (the largest {_mib(largest)})" if type(largest) is int else "")
            + f": at least half the {_mib(whole)} of the whole (..., Lq, Lk) = {shape} {q.dtype} score matrix"
            + (f", where the reference solution holds {_mib(ref)} at most" if ref is not None else "")
            + "; compute the scores one chunk of keys at a time, (..., Lq, chunk_size), keeping only the running "
              "max, denominator and output")


def _projections_are_linear(case, got, expected):
    """The layer's ``W_q W_k W_v W_o`` are ``nn.Linear`` or a subclass (a layer driver's ``_linears``)."""
    types = got.get("_linears")
    if not isinstance(types, dict):
        return None
    # Names and class names the child reports: the learner's words, each in a slot (F2 of the review).
    wrong = {name: kind for name, kind in types.items() if kind is not None}
    if not wrong:
        return None
    known = ("W_q", "W_k", "W_v", "W_o")
    wrong = {(name if name in known else slot(name, 20)): kind for name, kind in list(wrong.items())[:4]}

    def what(kind):
        if kind == "builtins.NoneType":
            return "None or missing"
        short = str(kind).rsplit(".", 1)[-1]
        return f"{'an' if short[:1].lower() in 'aeiou' else 'a'} {slot(short, 40)} ({slot(kind, 80)})"

    names = list(wrong)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (f"your layer's {listed} {'is' if len(names) == 1 else 'are'} not nn.Linear: "
            + ", ".join(f"{name} is {what(kind)}" for name, kind in wrong.items())
            + "; W_q, W_k, W_v and W_o must be nn.Linear modules (torch.nn.Linear or a subclass of it)")


PROPERTIES = {
    "rows_sum_to_one": _rows_sum_to_one,
    "masked_exactly_zero": _masked_exactly_zero,
    "dropout_in_training": _dropout_in_training,
    "never_holds_all_scores": _never_holds_all_scores,
    "projections_are_linear": _projections_are_linear,
    "inputs_unchanged": lambda case, got, expected: None,  # compared with the outputs, see compare_outputs
}


def check_case(case: Case, got, expected) -> list[str]:
    """The reasons a case fails, most telling first (properties before value mismatches)."""
    if not isinstance(got, dict):
        return [f"returned data of the wrong form ({type(got).__name__})"]
    reasons = [m for m in (PROPERTIES[p](case, got, expected) for p in case.properties) if m]
    message = compare_outputs(got, expected, case, check_inputs="inputs_unchanged" in case.properties)
    if message and " inputs: keep the input's dtype" in message and not _float_inputs(case):
        # A function of sizes only (a position table) has no input whose dtype it could keep.
        message = re.sub(r" for (\w+) inputs: keep the input's dtype", r", expected \1", message)
    return reasons + [message] if message else reasons


def _float_inputs(case: Case) -> bool:
    """Whether the case hands the call a floating-point array (positional or named)."""
    inputs = case.inputs
    values = [*inputs.get("args", ()), *inputs.get("kwargs", {}).values(),
              *(v for k, v in inputs.items() if k not in ("args", "kwargs"))]
    return any(isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in values)
