"""Scoring: the one place that compares a learner's output with the expected one and puts it in words.

Both graders use it, so that the same submission on the same case reads the same:
``grading/judge.py`` (the real grade: expected outputs from the solutions, known bugs run
live) and ``selfcheck.py`` (the learner release: expected outputs and the known bugs' outputs
stored). What differs between them is only where the expected and the bugs' outputs come from.

Reading order, one module each: compare two outputs (``compare.py``: :func:`compare_outputs`),
check a case's properties (``properties.py``: :func:`check_case`), hold a known bug's
diagnosis only where it is true (``diagnoses.py``), put what makes a case fail in words
(``causes.py``), then :func:`score` an exercise (here): statuses, the causes of the failing
cases grouped in the summary (``summary.py``: each named once, with how many cases it
explains, and the rung of the case ladder where the code stops being right). Points as
shown: ``rounding.py``. What other modules use is importable from ``autograder.scoring``.
"""
from __future__ import annotations

from ..compare import compare_outputs  # noqa: F401  (its users find it here, beside check_case)
from ..spec import Case, CaseError, CaseResult, ExerciseResult
from . import relations, summary
from .summary import INERT, PROBE  # noqa: F401  (the checks mark their cases with them)
from .causes import ERROR_FEEDBACK, MISMATCH_WORDS, cause, cause_parts, error_feedback, sentence  # noqa: F401
from .diagnoses import MATCH, matches, stated_diagnoses  # noqa: F401
from .properties import PROPERTIES, case_mask, check_case  # noqa: F401
from .rounding import points, round_points, shown_points, shown_total  # noqa: F401

NOT_ATTEMPTED = ("not_implemented", "missing")
ERROR_KINDS = ("import", "crash", "memory")


# --- an exercise's verdict ---------------------------------------------------------------------

def status(kinds: list[str], n_cases: int, score_: float, max_score: float) -> str:
    """all cases "not_implemented"/"missing" -> not attempted; any timeout -> timed out;
    import/crash/memory -> error; else passed / partial / failed by score."""
    if kinds and len(kinds) == n_cases and all(k in NOT_ATTEMPTED for k in kinds):
        return "not attempted"
    if "timeout" in kinds:
        return "timed out"
    if any(k in ERROR_KINDS for k in kinds):
        return "error"
    if score_ >= max_score - 1e-9:
        return "passed"
    return "partial" if score_ > 0 else "failed"


def _passes(case: Case, got, expected) -> bool:
    """Whether an output passes its case (an intervention's outcome: the same test as a graded case's)."""
    if isinstance(got, CaseError):
        return False
    try:
        return not check_case(case, got, expected)
    except Exception:  # malformed data from the learner's process passes nothing
        return False


def _reindexed(bugs, keep: list[int]):
    """``bugs`` asked by the graded cases' own indices (the interventions' taken out)."""
    return lambda i, diagnosis=None: bugs(keep[i]) if diagnosis is None else bugs(keep[i], diagnosis)


def score(exercise_id: str, max_points: float, cases: list[Case], outputs: list, expected: list,
          bugs, ladder=(), notes=(), hints=None) -> ExerciseResult:
    """Score an exercise from the learner's ``outputs`` (driver data or CaseError per case).

    ``expected[i]`` is the expected output of case i (used where ``outputs[i]`` is data).
    ``bugs(i)`` maps the known bugs that show on case i to their outputs there, one per way of
    writing the bug (None where that way does not show): see :func:`stated_diagnoses`, which
    keeps only the diagnoses that hold. Where several hold for a case, the one that explains
    most failing cases names its cause."""
    outputs = list(outputs) + [CaseError("crash", "no result came back")] * (len(cases) - len(outputs))
    probes = summary.probe_outcomes(cases, outputs, expected, _passes)
    keep = [i for i, c in enumerate(cases) if summary.PROBE not in (c.features or {})]
    if len(keep) < len(cases):  # an intervention's copy words a cause (if it ran) and earns nothing
        cases, outputs, expected = [cases[i] for i in keep], [outputs[i] for i in keep], [expected[i] for i in keep]
        bugs = _reindexed(bugs, keep)
    total = sum(c.weight for c in cases) or 1.0
    results, reasons_of = [], {}
    for i, (case, got) in enumerate(zip(cases, outputs)):
        share = max_points * case.weight / total
        if isinstance(got, CaseError):
            results.append(CaseResult(case.name, 0.0, share, False, error_feedback(got)))
            continue
        try:
            reasons = check_case(case, got, expected[i])
        except Exception as err:  # malformed data from the learner's process, never a grader crash
            reasons = [f"returned data the grader cannot read ({type(err).__name__})"]
        if reasons:
            reasons_of[i] = reasons
        results.append(CaseResult(case.name, 0.0 if reasons else share, share, not reasons, "; ".join(reasons[:2])))
    passed = [r.passed for r in results]
    stated = stated_diagnoses(cases, outputs, passed, bugs) if reasons_of else {}
    for i in reasons_of:
        found = [d for d, explained in stated.items() if i in explained]
        if found:
            best = max(found, key=lambda d: len(stated[d]))  # max keeps the first of equals: the bugs' order
            results[i].diagnosis = best
            results[i].feedback = f"{sentence(best)} ({results[i].feedback})"
    failed, rungs = [], {}
    # A case the grader never ran, or cut short by the time the cases before it spent
    # (``CaseError.evidence``), scores nothing and shows nothing: no part and no pair is judged by
    # it, and no rung of the ladder is said to pass while such a case is there.
    shown = [getattr(o, "evidence", True) for o in outputs]
    for i, (case, result) in enumerate(zip(cases, results)):
        rungs.setdefault(case.rung, []).append(result.passed)
        if not result.passed:
            error = outputs[i] if isinstance(outputs[i], CaseError) else None
            failed.append((*cause(result, error, reasons_of.get(i, [])), case.name))
            result.cause = cause_parts(error, reasons_of.get(i, []))
    named = {i for i, r in enumerate(results) if r.diagnosis}
    isolated = summary.isolated(cases, passed, outputs, hints or {}, named, probes) if any(c.features for c in cases) else None
    kinds = [o.kind for o in outputs if isinstance(o, CaseError)]
    points_ = round(sum(r.score for r in results), 9)  # case shares are fractions of the points
    rungs = rungs if all(shown) else {}
    parts = summary.by_part(cases, [ok if show else None for ok, show in zip(passed, shown)], probes)
    # What the learner's arrays are, against the reference's, where no known bug names every failing case.
    found = relations.found(cases, outputs, expected) if len(named) < len(reasons_of) else []
    words = summary.sentences(failed, ladder, rungs, isolated, parts,
                              found + summary.line_facts([o for o in outputs if isinstance(o, CaseError)])) if failed else ""
    return ExerciseResult(exercise_id, status(kinds, len(cases), points_, max_points), points_, float(max_points),
                          results, words, list(notes), ladder=summary.climbed(ladder, rungs) if failed else "")
