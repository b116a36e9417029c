"""Comparing two plain-data outputs of a driver, in words: the learner's and the expected one.

``compare_outputs`` says, in one sentence, the first way an output differs (its form, a
shape with the case's axis names, a dtype, NaN, the largest error), or returns None when it
matches within the case's tolerance. Used only through ``scoring/``, by both graders.
"""
from __future__ import annotations

import numpy as np

from .isolation.drivers.core import META_KEYS
from .said import slot, value as case_value
from .spec import Case


# --- comparing two outputs ---------------------------------------------------------------------

def _labels(shape, sizes):
    """``(B, H, Lq, Lk)`` for a shape whose sizes are all distinct names of the case, else ''."""
    names = {}
    for name, n in (sizes or {}).items():
        names.setdefault(n, []).append(name)
    labels = [names[n][0] if len(names.get(n, ())) == 1 else None for n in shape]
    return "" if None in labels or not shape else f" = ({', '.join(labels)})"


def _shape_hint(got, expected):
    if len(got) < len(expected):
        return ": an axis is missing"
    if len(got) > len(expected):
        return ": an extra axis"
    return ": axes swapped or transposed?" if sorted(got) == sorted(expected) else ""


def array_index(flat, shape):
    """The position of flat index ``flat`` in an array of ``shape``, as a tuple of ints."""
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _where(flat, shape, sizes):
    """``index (0, 2)``, or ``layer 0, head 2`` for a (layers, heads) table of head scores."""
    at = array_index(flat, shape)
    if sizes and set(sizes) == {"layers", "heads"} and len(at) == 2:
        return f"layer {at[0]}, head {at[1]}"
    return f"index {at}"


def number(x):
    """A value as a message shows it: a float to six significant digits."""
    return f"{x:.6g}" if isinstance(x, (float, np.floating)) else str(x)


def _a(noun):
    word = noun.lstrip("\x0e")  # a slot's mark (said.slot) is not the word's first letter
    return f"an {noun}" if word[:1].lower() in "aeiou" or word.startswith("nd") else f"a {noun}"


def compare_arrays(name, got, expected, rtol, atol, sizes=None):
    """None when ``got`` matches ``expected``, else one sentence saying how it differs.

    NaN matches NaN and inf matches inf of the same sign (a bug's output may hold them);
    the reference never does, so a learner's NaN always shows as a mismatch.
    """
    if not isinstance(got, np.ndarray):
        return f"{name} is {'None' if got is None else _a(type(got).__name__)}, expected an array"
    if got.shape != expected.shape:
        return (f"{name} has shape {slot(got.shape, 40)}{_labels(got.shape, sizes)}, expected "
                f"{expected.shape}{_labels(expected.shape, sizes)}{_shape_hint(got.shape, expected.shape)}")
    if expected.dtype == bool:
        if got.dtype != bool:
            return f"{name} has dtype {got.dtype}, expected a boolean mask (True = may attend)"
        wrong = np.flatnonzero(got != expected)
        if wrong.size:
            at = array_index(wrong[0], got.shape)
            return (f"{name} is wrong at {wrong.size} of {got.size} entries, first at index {at}: "
                    f"got {case_value(bool(got[at]))}, expected {case_value(bool(expected[at]))}")
        return None
    if got.dtype != expected.dtype:
        if np.issubdtype(expected.dtype, np.floating) and np.issubdtype(got.dtype, np.floating):
            return f"{name} is {got.dtype} for {expected.dtype} inputs: keep the input's dtype"
        return f"{name} has dtype {got.dtype}, expected {expected.dtype}"
    if not np.issubdtype(expected.dtype, np.floating):
        wrong = np.flatnonzero(got != expected)
        return None if not wrong.size else f"{name} differs at {wrong.size} of {got.size} entries"
    g, e = got.astype(np.float64), expected.astype(np.float64)
    same_special = (np.isnan(g) & np.isnan(e)) | (np.isinf(g) & (g == e))
    for label, bad in (("NaN", np.isnan(g)), ("inf", np.isinf(g))):
        bad = np.flatnonzero(bad & ~same_special)
        if bad.size:
            return (f"{name} has {label} at {bad.size} of {g.size} entries, first at index "
                    f"{array_index(bad[0], g.shape)} (expected {case_value(number(e.flat[bad[0]]))})")
    with np.errstate(invalid="ignore", over="ignore"):
        # Where only the expected value is NaN/inf the error counts as infinite.
        err = np.where(same_special, 0.0, np.where(np.isfinite(e), np.abs(g - e), np.inf))
        bad = err > atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
    if bad.any():
        worst = int(np.argmax(np.where(bad, err, -1.0)))
        return (f"{name} differs from the reference at {int(bad.sum())} of {g.size} entries; the largest "
                f"error is {case_value(number(err.flat[worst]))} at {_where(worst, g.shape, sizes)} (got {case_value(number(g.flat[worst]))}, "
                f"expected {case_value(number(e.flat[worst]))}; tolerance rtol={rtol:g}, atol={atol:g})")
    return None


# How the entries of the torch drivers' dict outputs read in a sentence.
DICT_LABELS = {"param_shapes": "the shape of your layer's", "param_dtypes": "the dtype of your layer's",
               "grads": "the gradient w.r.t."}


# How a driver's output keys read in a sentence, where the key alone would not say it.
OUTPUT_LABELS = {"weights_train": "the weights returned in training mode (before dropout)"}


def compare_values(name, got, expected, rtol, atol, sizes=None):
    """Compare plain data of any form (arrays, numbers, None, lists, dicts)."""
    if isinstance(expected, np.ndarray):
        return compare_arrays(name, got, expected, rtol, atol, sizes)
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{name} is {_a(type(got).__name__)}, expected a dict"
        for key, item in expected.items():
            if name == "grads" and got.get(key) is None and item is not None:
                return (f"no gradient reached {key}: is something detached on the way to the output "
                        f"(.detach(), .numpy(), torch.no_grad(), a new tensor)?")
            label = f"{DICT_LABELS[name]} {key}" if name in DICT_LABELS else f"{name}[{key}]"
            message = compare_values(label, got.get(key), item, rtol, atol, sizes)
            if message:
                return message
        return None
    if name == "raises":  # call_raises: what the call did with inputs it must refuse
        return None if got == expected else f"raised {slot(got, 80)} where it must raise {expected}"
    if expected is None:
        return None if got is None else f"{name} is {case_value(repr(got)[:80])}, expected None"
    if got is None:
        return f"{name} is None"
    if isinstance(expected, str):  # a dtype's or a type's name: the grader's word; what came back is the child's
        return None if _same(got, expected) else f"{name} is {slot(repr(got), 120)}, expected {expected[:120]!r}"
    if isinstance(expected, list) and name.startswith(DICT_LABELS["param_shapes"]):  # a parameter's shape: a fact of the case's sizes
        return None if _same(got, expected) else f"{name} is {slot(got, 40)}, expected {expected}"
    if isinstance(expected, (bool, list)):
        return None if _same(got, expected) else f"{name} is {case_value(repr(got)[:120])}, expected {case_value(repr(expected)[:120])}"
    if isinstance(expected, int):
        if isinstance(got, np.ndarray) and got.shape == () and np.issubdtype(got.dtype, np.integer):
            got = int(got)  # a NumPy integer scalar counts as the int it holds
        if type(got) is not int:
            return f"{name} is {_a(type(got).__name__)}, expected an int"
        return None if got == expected else f"{name} is {case_value(got)}, expected {case_value(expected)}"
    if isinstance(expected, float):
        if type(got) not in (int, float):
            return f"{name} is {_a(type(got).__name__)}, expected a float"
        return None if np.isclose(got, expected, rtol=rtol, atol=atol) else f"{name} is {case_value(got)}, expected {case_value(expected)}"
    return None if _same(got, expected) else f"{name} is {case_value(repr(got)[:120])}, expected {case_value(repr(expected)[:120])}"


def _same(got, expected):
    """Equality of plain data of the same type, never raising (a list may hold arrays)."""
    try:
        return type(got) is type(expected) and bool(got == expected)
    except Exception:
        return False


def _what(data):
    kind = data.get("result_type")
    if kind is None:
        return "nothing"
    if kind == "NoneType":
        return "None"
    count = data.get("len") if type(data.get("len")) is int else "?"  # the child's to say: a count, or nothing
    if kind in ("tuple", "list"):  # the count is the learner's number too: in a slot (F1 of the review)
        return f"a {kind} of {slot(count, 12)} value{'s' * (count != 1)}"
    return _a(slot(kind, 40))


def compare_outputs(got, expected, case: Case, check_inputs=False):
    """None when two driver outputs match within the case's tolerance, else a sentence."""
    if not isinstance(got, dict):
        return f"the learner's process returned {_a(type(got).__name__)}, not the driver's data"
    sizes = case.inputs.get("sizes")
    names = [k for k in expected if k not in META_KEYS and not k.startswith("_")]
    # What did come back first (a layer of the wrong shape returns its parameter shapes only).
    for key in names:
        if key in got:
            label = OUTPUT_LABELS.get(key, key) if names != ["out"] else (
                "your scores" if case.driver == "importance_run" else "the result")
            message = compare_values(label, got[key], expected[key], case.rtol, case.atol, sizes)
            if message:
                return message
    if isinstance(got.get("_harness"), str) and "_harness" not in expected:
        return slot(got["_harness"], 300)  # the harness failed before the learner's result existed (a bug's may too)
    missing = [k for k in names if k not in got]
    if missing and "result_type" in expected:
        want = expected.get("types", {})
        same_form = got.get("result_type") == expected["result_type"] and got.get("len") == expected.get("len")
        if same_form or (got.get("result_type") in ("tuple", "list") and got.get("len") == expected.get("len")):
            k = missing[0]
            return f"{k} is {_a(slot(got.get('types', {}).get(k, '?'), 40))}, expected {_a(want.get(k, 'ndarray'))}"
        form = "(" + ", ".join(want) + ")" if len(want) > 1 else ""
        return f"returned {_what(got)}, expected {_what(expected)} {form}".rstrip()
    if missing:
        return f"{missing[0]} is missing from the output"
    return _inputs_changed(got, expected, case) if check_inputs else None


def _inputs_changed(got, expected, case):
    """The first array input that the call changed, as a sentence, else None.

    Positional inputs are the ``call`` driver's ``args``; named ones are those the reference
    run reported in ``kwargs_after`` (``call``'s kwargs, or a torch driver's query/key/value).
    """
    args = case.inputs.get("args", [])
    named = case.inputs.get("kwargs", case.inputs)
    after = list(zip(range(1, len(args) + 1), args, got.get("args_after") or [None] * len(args)))
    after += [(k, named.get(k), (got.get("kwargs_after") or {}).get(k)) for k in expected.get("kwargs_after") or {}]
    for which, before, now in after:
        if isinstance(before, np.ndarray):
            if not (isinstance(now, np.ndarray) and now.shape == before.shape
                    and np.array_equal(now, before, equal_nan=now.dtype.kind in "fc")):
                label = f"argument {which}" if isinstance(which, int) else f"argument {which!r}"
                return f"{label} was modified in place (exercises never modify their inputs)"
    return None
