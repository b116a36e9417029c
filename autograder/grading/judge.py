"""The judge: compare the learner's outputs with the reference's, score, and diagnose.

Runs in the grader's process. For each case it runs the case's driver against the reference
solutions (``reference.py``), compares with the learner's output (shapes, dtypes, NaN/inf,
values within the case's tolerance, properties), and scores the case all-or-nothing, each
case's weight normalised to the exercise's points. On mismatches it runs the exercise's known
bugs on the same inputs: the bug whose output the learner's matches in most failing cases
names the likely cause.
"""
from __future__ import annotations

import numpy as np

from ..isolation import drivers
from . import reference
from ..spec import Case, CaseError, CaseResult, Exercise, ExerciseResult

# What a CaseError of each kind tells the learner; {} is the pipeline's message (for an
# exception: "ValueError: message (attention.py, line 12)").
ERROR_FEEDBACK = {
    "not_implemented": "not attempted: the stub still raises NotImplementedError",
    "missing": "not attempted: {}",
    "import": "the module failed to import: {}",
    "exception": "raised {}",
    "timeout": "timed out: {}",
    "memory": "ran out of memory: {}",
    "crash": "the process running your code died: {}",
    "garbage": "returned something that is not plain data: {}",
}
NOT_ATTEMPTED = ("not_implemented", "missing")
ERROR_KINDS = ("import", "crash", "memory")


# --- comparing two driver outputs --------------------------------------------------------------

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
    if sorted(got) == sorted(expected):
        return ": axes swapped or transposed?"
    return ""


def _index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _fmt(x):
    return f"{x:.6g}" if isinstance(x, (float, np.floating)) else str(x)


def compare_arrays(name, got, expected, rtol, atol, sizes=None):
    """None when ``got`` matches ``expected``, else one sentence saying how it differs.

    NaN matches NaN and inf matches inf of the same sign (a bug's output may hold them);
    the reference never does, so a learner's NaN always shows as a mismatch.
    """
    if not isinstance(got, np.ndarray):
        return f"{name} is {'None' if got is None else _a(type(got).__name__)}, expected an array"
    if got.shape != expected.shape:
        return (f"{name} has shape {got.shape}{_labels(got.shape, sizes)}, expected "
                f"{expected.shape}{_labels(expected.shape, sizes)}{_shape_hint(got.shape, expected.shape)}")
    if expected.dtype == bool:
        if got.dtype != bool:
            return f"{name} has dtype {got.dtype}, expected a boolean mask (True = may attend)"
        wrong = np.flatnonzero(got != expected)
        if wrong.size:
            at = _index(wrong[0], got.shape)
            return (f"{name} is wrong at {wrong.size} of {got.size} entries, first at index {at}: "
                    f"got {bool(got[at])}, expected {bool(expected[at])}")
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
                    f"{_index(bad[0], g.shape)} (expected {_fmt(e.flat[bad[0]])})")
    with np.errstate(invalid="ignore", over="ignore"):
        # Where only the expected value is NaN/inf the error counts as infinite.
        err = np.where(same_special, 0.0, np.where(np.isfinite(e), np.abs(g - e), np.inf))
        bad = err > atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
    if bad.any():
        worst = int(np.argmax(np.where(bad, err, -1.0)))
        at = _index(worst, g.shape)
        return (f"{name} differs from the reference at {int(bad.sum())} of {g.size} entries; the largest "
                f"error is {_fmt(err.flat[worst])} at index {at} (got {_fmt(g.flat[worst])}, expected "
                f"{_fmt(e.flat[worst])}; tolerance rtol={rtol:g}, atol={atol:g})")
    return None


# How the entries of the torch drivers' dict outputs read in a sentence.
DICT_LABELS = {"param_shapes": "the shape of your layer's", "grads": "the gradient w.r.t."}


def compare_values(name, got, expected, rtol, atol, sizes=None):
    """Compare plain data of any form (arrays, numbers, None, lists, dicts)."""
    if isinstance(expected, np.ndarray):
        return compare_arrays(name, got, expected, rtol, atol, sizes)
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{name} is {_a(type(got).__name__)}, expected a dict"
        for key, value in expected.items():
            if name == "grads" and got.get(key) is None and value is not None:
                return (f"no gradient reached {key}: is something detached on the way to the output "
                        f"(.detach(), .numpy(), torch.no_grad(), a new tensor)?")
            label = f"{DICT_LABELS[name]} {key}" if name in DICT_LABELS else f"{name}[{key}]"
            message = compare_values(label, got.get(key), value, rtol, atol, sizes)
            if message:
                return message
        return None
    if expected is None:
        return None if got is None else f"{name} is {got!r}, expected None"
    if got is None:
        return f"{name} is None"
    if isinstance(expected, (bool, list, str)):
        return None if _same(got, expected) else f"{name} is {got!r}, expected {expected!r}"
    if isinstance(expected, int):
        if isinstance(got, np.ndarray) and got.shape == () and np.issubdtype(got.dtype, np.integer):
            got = int(got)
        if type(got) is not int:
            return f"{name} is {_a(type(got).__name__)}, expected an int"
        return None if got == expected else f"{name} is {got}, expected {expected}"
    if isinstance(expected, float):
        if type(got) not in (int, float):
            return f"{name} is {_a(type(got).__name__)}, expected a float"
        return None if np.isclose(got, expected, rtol=rtol, atol=atol) else f"{name} is {got}, expected {expected}"
    return None if _same(got, expected) else f"{name} is {got!r}, expected {expected!r}"


def _same(got, expected):
    """Equality of plain data of the same type, never raising (a list may hold arrays)."""
    try:
        return type(got) is type(expected) and bool(got == expected)
    except Exception:
        return False


def _a(noun):
    return f"an {noun}" if noun[:1].lower() in "aeiou" or noun.startswith("nd") else f"a {noun}"


def _what(data):
    kind = data.get("result_type")
    if kind is None:
        return "nothing"
    if kind == "NoneType":
        return "None"
    if kind in ("tuple", "list"):
        return f"a {kind} of {data.get('len')} value{'s' * (data.get('len') != 1)}"
    return _a(str(kind))


def compare_outputs(got, expected, case: Case, check_inputs=False):
    """None when two driver outputs match within the case's tolerance, else a sentence."""
    if not isinstance(got, dict):
        return f"the learner's process returned {_a(type(got).__name__)}, not the driver's data"
    sizes = case.inputs.get("sizes")
    names = [k for k in expected if k not in drivers.META_KEYS and not k.startswith("_")]
    # What did come back first (a layer of the wrong shape returns its parameter shapes only).
    for key in names:
        if key in got:
            label = "the result" if names == ["out"] else key  # a single output has no name of its own
            message = compare_values(label, got[key], expected[key], case.rtol, case.atol, sizes)
            if message:
                return message
    missing = [k for k in names if k not in got]
    if missing and "result_type" in expected:
        want = expected.get("types", {})
        same_form = got.get("result_type") == expected["result_type"] and got.get("len") == expected.get("len")
        if same_form or (got.get("result_type") in ("tuple", "list") and got.get("len") == expected.get("len")):
            k = missing[0]
            return f"{k} is {_a(str(got.get('types', {}).get(k, '?')))}, expected {_a(want.get(k, 'ndarray'))}"
        form = "(" + ", ".join(want) + ")" if len(want) > 1 else ""
        return f"returned {_what(got)}, expected {_what(expected)} {form}".rstrip()
    if missing:
        return f"{missing[0]} is missing from the output"
    if check_inputs:
        return _inputs_changed(got, expected, case)
    return None


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


# --- properties --------------------------------------------------------------------------------

def _probability_key(expected):
    return "weights" if "weights" in expected else "out"


def _label(key):
    return "the result" if key == "out" else key


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
    at = _index(bad[0], sums.shape)
    if want.flat[bad[0]] == 0:
        return (f"the fully masked row of {_label(key)} at index {at} sums to {_fmt(sums.flat[bad[0]])}, "
                f"expected all zeros")
    return f"the rows of {_label(key)} do not sum to one: the row at index {at} sums to {_fmt(sums.flat[bad[0]])}"


def _masked_exactly_zero(case, got, expected):
    key = _probability_key(expected)
    g, e = got.get(key), expected.get(key)
    if not (isinstance(g, np.ndarray) and g.shape == e.shape):
        return None
    bad = np.flatnonzero((e == 0) & (g != 0))
    if not bad.size:
        return None
    at = _index(bad[0], g.shape)
    return f"{_label(key)} must be exactly 0 at masked keys: got {_fmt(g.flat[bad[0]])} at index {at}"


def _dropout_in_training(case, got, expected):
    train, evaluated = got.get("_out_train"), got.get("out")
    if isinstance(train, np.ndarray) and isinstance(evaluated, np.ndarray) and train.shape == evaluated.shape:
        if np.allclose(train, evaluated):
            return "in training mode the output equals the eval-mode output: dropout is not applied to the weights"
    return None


PROPERTIES = {
    "rows_sum_to_one": _rows_sum_to_one,
    "masked_exactly_zero": _masked_exactly_zero,
    "dropout_in_training": _dropout_in_training,
    "inputs_unchanged": lambda case, got, expected: None,  # compared with the outputs, see compare_outputs
}


# --- running drivers in the grader's process ---------------------------------------------------

def run_driver(case: Case, ns):
    return getattr(drivers, case.driver)(ns, **case.inputs)


# What the reference (or a known bug) returns on a case, kept for the next submission: the
# runner draws each exercise's cases once per process and seed, so a batch grader computes
# them once for the whole class. Keyed by identity; the key's objects are kept alive with
# the entry (an id is unique only while its object lives). Nothing here mutates an output.
_OUTPUTS: dict = {}
_OUTPUTS_MAX = 4096


def _cached(objects: tuple, compute):
    key = tuple(map(id, objects))
    hit = _OUTPUTS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], objects)):
        return hit[1]
    if len(_OUTPUTS) >= _OUTPUTS_MAX:
        _OUTPUTS.clear()
    value = compute()
    _OUTPUTS[key] = (objects, value)
    return value


def reference_output(case: Case):
    return _cached((case,), lambda: run_driver(case, reference.namespace()))


def _bug_output(case, exercise, bug):
    def run():
        try:
            with np.errstate(all="ignore"):
                return run_driver(case, reference.namespace({exercise.id: bug}))
        except Exception:  # a bug that cannot even run on these inputs explains nothing
            return None

    return _cached((case, exercise, bug), run)


def check_case(case, got, expected):
    """The reasons a case fails, most telling first (properties before value mismatches)."""
    if not isinstance(got, dict):
        return [f"returned data of the wrong form ({type(got).__name__})"]
    reasons = []
    for prop in case.properties:
        message = PROPERTIES[prop](case, got, expected)
        if message:
            reasons.append(message)
    message = compare_outputs(got, expected, case, check_inputs="inputs_unchanged" in case.properties)
    if message:
        reasons.append(message)
    return reasons


def diagnose(exercise, cases, outputs, expected, failing):
    """``{case index: diagnosis}`` for the failing cases a known bug explains, best bug first."""
    matches = {}
    for diagnosis, bug in exercise.bugs.items():
        variants = bug if isinstance(bug, (tuple, list)) else (bug,)  # ways of writing the same mistake
        for i in failing:
            for variant in variants:
                out = _bug_output(cases[i], exercise, variant)
                if out is None or compare_outputs(out, expected[i], cases[i], True) is None:
                    continue  # this bug does not show on this case
                if _matches(outputs[i], out, cases[i]):
                    matches.setdefault(diagnosis, []).append(i)
                    break
    ranked = sorted(matches, key=lambda d: -len(matches[d]))  # stable: ties keep the bugs' order
    found = {}
    for diagnosis in ranked:
        for i in matches[diagnosis]:
            found.setdefault(i, diagnosis)
    return found, ranked


def _matches(got, bug_output, case):
    try:
        return compare_outputs(got, bug_output, case, True) is None
    except Exception:  # malformed learner data matches no bug
        return False


def _sentence(text):
    return text[:1].upper() + text[1:]


def judge_exercise(exercise: Exercise, cases: list[Case], outputs: list, notes: list[str]) -> ExerciseResult:
    outputs = list(outputs) + [CaseError("crash", "no result came back")] * (len(cases) - len(outputs))
    total = sum(c.weight for c in cases) or 1.0
    results, expected, failing = [], {}, []
    for i, (case, got) in enumerate(zip(cases, outputs)):
        max_score = exercise.points * case.weight / total
        if isinstance(got, CaseError):
            feedback = ERROR_FEEDBACK.get(got.kind, got.kind + ": {}").format(got.message or "no details")
            results.append(CaseResult(case.name, 0.0, max_score, False, feedback))
            continue
        expected[i] = reference_output(case)
        try:
            reasons = check_case(case, got, expected[i])
        except Exception as err:  # malformed data from the learner's process, never a grader crash
            reasons = [f"returned data the grader cannot read ({type(err).__name__})"]
        if reasons:
            failing.append(i)
        feedback = "; ".join(reasons[:2])
        results.append(CaseResult(case.name, 0.0 if reasons else max_score, max_score, not reasons, feedback))
    found, ranked = diagnose(exercise, cases, outputs, expected, failing) if failing and exercise.bugs else ({}, [])
    for i, diagnosis in found.items():
        results[i].diagnosis = diagnosis
        results[i].feedback = f"{_sentence(diagnosis)} ({results[i].feedback})"
    score = round(sum(r.score for r in results), 9)  # case shares are fractions of the points
    kinds = [o.kind for o in outputs if isinstance(o, CaseError)]
    if kinds and len(kinds) == len(outputs) and all(k in NOT_ATTEMPTED for k in kinds):
        status = "not attempted"
    elif "timeout" in kinds:
        status = "timed out"
    elif any(k in ERROR_KINDS for k in kinds):
        status = "error"
    elif score >= exercise.points - 1e-9:
        status = "passed"
    else:
        status = "partial" if score > 0 else "failed"
    return ExerciseResult(exercise.id, status, score, float(exercise.points), results,
                          _summary(results, ranked, found), list(notes))


def _summary(results, ranked, found):
    """The exercise's feedback: the likeliest known bug, else the first failing case's reason."""
    failed = [r for r in results if not r.passed]
    if not failed:
        return ""
    if ranked:
        n = sum(1 for d in found.values() if d == ranked[0])
        return f"{_sentence(ranked[0])} (in {n} of {len(failed)} failing cases)."
    first = failed[0]
    more = f" ({len(failed) - 1} more failing cases)" if len(failed) > 1 else ""
    return f"{first.name}: {first.feedback}{more}"


def judge_in_process(exercise: Exercise, implementation=None, seed: int = 0) -> ExerciseResult:
    """Grade a *trusted* implementation (None: the reference) in this process, as the pipeline would.

    For the grader's own tests and for contributors trying a new exercise's checks: the drivers
    run against the reference namespace with ``implementation`` swapped in. Never use it on
    learner code, which must run in the sandbox.
    """
    ns = reference.namespace(None if implementation is None else {exercise.id: implementation})
    cases = exercise.cases(np.random.default_rng(seed))
    outputs = []
    for case in cases:
        try:
            with np.errstate(all="ignore"):
                outputs.append(run_driver(case, ns))
        except Exception as err:
            outputs.append(CaseError("exception", f"{type(err).__name__}: {err}"))
    return judge_exercise(exercise, cases, outputs, [])
