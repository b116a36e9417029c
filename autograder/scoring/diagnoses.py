"""Known bugs as claims: whether the learner's output is a known bug's (:func:`matches`), and
which diagnoses hold over all the cases (:func:`stated_diagnoses`)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..compare import compare_outputs
from ..spec import Case, CaseError


# A case's features key: the tolerance ``{"rtol": .., "atol": ..}`` at which a learner's output is
# the known bug's on it, where a correct dtype path of the learner's own (a float32 cos/sin table
# in float64 output) moves it further from the catalogued bug than the case's tolerance: the
# bugs still differ from each other by far more (order one).
MATCH = "bugs matched within"


def matches(got, bug_output, case: Case) -> bool:
    """Whether the learner's output is the known bug's on this case (values, not properties), at
    the case's tolerance or the looser one its features give for matching (:data:`MATCH`)."""
    within = (case.features or {}).get(MATCH)
    if within:
        case = dataclasses.replace(case, rtol=max(case.rtol, within["rtol"]), atol=max(case.atol, within["atol"]))
    try:
        return compare_outputs(got, bug_output, case, True) is None
    except Exception:  # malformed learner data matches no bug
        return False


def _only_nan(got) -> bool:
    """Whether every float array of the learner's output is NaN or inf throughout: two such outputs
    agree whatever computed them (a NaN from 0 * inf anywhere spreads), so a match says nothing."""
    arrays = [v for k, v in (got.items() if isinstance(got, dict) else ()) if not str(k).startswith("_")
              and isinstance(v, np.ndarray) and v.dtype.kind in "fc" and v.size]
    return bool(arrays) and not any(np.isfinite(a).any() for a in arrays)


def _same_form(got, bug_output) -> bool:
    """Whether the learner's output has the bug's arrays in the same shapes and dtypes: then a
    difference in values means the learner's code computes something else than the bug."""
    if not isinstance(got, dict) or not isinstance(bug_output, dict):
        return False
    for key, value in bug_output.items():
        if isinstance(value, np.ndarray) and not key.startswith("_"):
            mine = got.get(key)
            if not (isinstance(mine, np.ndarray) and mine.shape == value.shape and mine.dtype == value.dtype):
                return False
    return True


def stated_diagnoses(cases: list[Case], outputs: list, passed: list[bool], bugs) -> dict[str, list[int]]:
    """``{diagnosis: [failing cases it explains]}``, for the diagnoses that hold as claims.

    ``bugs(i)`` maps each known bug that shows on case i (its output differs from the expected
    one) to its outputs there, one per way of writing it (None where that way does not show);
    ``bugs(i, diagnosis)`` is that one bug's entry (None when it does not show), so that a
    grader running the bugs live runs only those a claim needs.
    A way of writing a bug holds when the learner's output is that way's on some failing
    cases, the learner passes no case where it shows (right where the bug is wrong: not that
    bug), and the learner's output differs from it, in the same form, on no more cases than it
    matches (one match among many differences is a coincidence). Only then is the sentence
    "your output matches ..." stated, and only on the cases it matches."""
    failing = [i for i, ok in enumerate(passed) if not ok and not isinstance(outputs[i], CaseError)
               and not _only_nan(outputs[i])]
    support: dict = {}
    for i in failing:
        for diagnosis, outs in bugs(i).items():
            for v, out in enumerate(outs):
                if out is not None and matches(outputs[i], out, cases[i]):
                    support.setdefault((diagnosis, v), []).append(i)
    stated: dict[str, list[int]] = {}
    for (diagnosis, v), explained in support.items():
        against = 0
        for j, got in enumerate(outputs):
            if j in explained or isinstance(got, CaseError):
                continue
            outs = bugs(j, diagnosis) or ()
            out = outs[v] if v < len(outs) else None
            if out is None:
                continue
            if passed[j]:
                break
            against += _same_form(got, out)
        else:
            if against <= len(explained):
                stated[diagnosis] = sorted(set(stated.get(diagnosis, [])) | set(explained))
    return stated
